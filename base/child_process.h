// ChildProcess: a program we start with its stdin and stdout on pipes to us,
// and optionally its stderr on a third (kept for messages). Used to run an agent
// over pipes: `ferry-agent serve` for a local host (orchestrator/hosts/local_transport.h)
// and `ssh HOST ferry-agent serve` for a direct copy (agents/push.h); and the
// eval worker for an eval in the coordinator (jobs/eval/stage/eval_stage.h).
//
// The destructor closes the pipes, gives the child a moment to exit on EOF and
// then kills it, and reaps it: no zombie, no leaked fd. One thread uses an object.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace ferry {

class ChildProcess {
 public:
  struct Options {
    bool capture_stderr = false;     // else the child inherits ours
    bool own_process_group = false;  // keep terminal signals (Ctrl-C) away from it
    bool stderr_to_stdout = false;   // one stream of its lines, in the order written
    bool die_with_parent = false;    // SIGKILL when the spawning thread ends (PR_SET_PDEATHSIG)
    std::vector<std::string> env;    // NAME=VALUE set for it on top of ours
  };

  /// Starts argv[0] (looked up in $PATH when it has no '/') with argv.
  static Result<std::unique_ptr<ChildProcess>> spawn(const std::vector<std::string>& argv, Options options);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  int stdin_fd() const { return in_; }
  int stdout_fd() const { return out_; }

  /// Writes all of `data` to the child's stdin, waiting at most `timeout_ms` for
  /// room each time the pipe is full. kUnavailable when the child is gone.
  Status write_all(const char* data, size_t n, int timeout_ms);
  /// Reads what is there from its stdout: 0 bytes when nothing came within
  /// `timeout_ms`, kUnavailable once it closed its output.
  Result<size_t> read_some(char* buf, size_t n, int timeout_ms);
  /// The last few KiB the child wrote to stderr (capture_stderr only), read
  /// without blocking.
  std::string stderr_tail();

  /// Closes its stdin (the child sees EOF), waits up to `grace_ms` for it to
  /// exit, then SIGKILLs it. Returns its wait status. Idempotent.
  int finish(int grace_ms);

 private:
  ChildProcess() = default;
  void drain_stderr();

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  int wait_status_ = -1;
  std::string stderr_;
};

}  // namespace ferry
