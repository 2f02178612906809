// Test support: run real executables (ferry, ferry-agent) and wait for events
// with deadlines. Tests link this; it links nothing of ferry's own.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ferry::testing {

struct ProcessResult {
  int exit_code = -1;  // 128+signal when killed
  std::string out;
  std::string err;
};

/// Runs `argv` to completion with extra environment; captures stdout and stderr.
ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                          int timeout_s = 120);

/// Starts `argv` in the background with stdout/stderr to `log_path`; returns its pid.
pid_t spawn_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                    const std::string& log_path);
/// Waits for a spawned child; returns its exit code (128+signal when killed).
int wait_process(pid_t pid, int timeout_s = 120);
/// wait_process, reading the child's peak RSS (VmHWM, KiB) from /proc meanwhile
/// into *peak_kib: the memory figure of a run, measured from outside.
int wait_process_measuring_rss(pid_t pid, int timeout_s, int64_t* peak_kib);

/// Polls `pred` every 20 ms until it holds or `timeout` passes. The condition is
/// the event waited on; there is no fixed sleep.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

/// Alive and not a zombie.
bool process_running(pid_t pid);

/// A fresh folder under /tmp, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);
bool exists(const std::string& path);
/// Whether the file system holding `dir` punches holes (tmpfs, ext4, xfs do).
bool punches_holes(const std::string& dir);

/// The build's bin folder (ferry, ferry-agent).
std::string bin_dir();

}  // namespace ferry::testing
