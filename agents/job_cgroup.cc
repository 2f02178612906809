#include "agents/job_cgroup.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/file_util.h"

namespace ferry {
namespace {

constexpr int kKillPollMs = 10;

// The cgroup2 mount: /sys/fs/cgroup on unified hosts, /sys/fs/cgroup/unified on hybrid ones.
std::string cgroup2_mount() {
  std::ifstream mounts("/proc/self/mounts");
  std::string dev, dir, type, rest;
  while (mounts >> dev >> dir >> type && std::getline(mounts, rest)) {
    if (type == "cgroup2") return dir;
  }
  return "";
}

// Our own cgroup v2 path ("0::/PATH" in /proc/self/cgroup).
std::string own_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

Status write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return errno_status("open " + path, errno);
  bool ok = std::fputs(text.c_str(), f) >= 0;
  ok = std::fclose(f) == 0 && ok;  // the kernel's answer comes with the flush
  return ok ? Status() : errno_status("write " + path, errno);
}

std::string members(const std::string& dir) {
  auto text = read_file(dir + "/cgroup.procs");
  return text.ok() ? *text : std::string();
}

}  // namespace

Result<std::string> job_cgroup_create(const std::string& name) {
  std::string mount = cgroup2_mount();
  if (mount.empty()) return failed_precondition("no cgroup v2 mount on this host");
  std::string own = own_cgroup();
  if (own.empty()) return failed_precondition("this process is in no cgroup v2");
  std::string parent = mount + (own == "/" ? "" : own);
  std::string dir = parent + "/" + name;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return errno_status("cannot make a cgroup under " + parent + " (not delegated to this user?)", errno);
  }
  return dir;
}

Status job_cgroup_join(const std::string& dir, int pid) {
  return write_text(dir + "/cgroup.procs", std::to_string(pid));
}

Status job_cgroup_kill(const std::string& dir, int wait_ms) {
  // The folder comes from a job record on disk: only ever one of ours.
  size_t slash = dir.rfind('/');
  if (slash == std::string::npos || dir.compare(slash + 1, 10, "ferry-job-") != 0 ||
      dir.find("/../") != std::string::npos || dir.find("/sys/fs/cgroup") != 0) {
    return invalid_argument("not a job cgroup: " + dir);
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return Status();
  bool has_kill = write_text(dir + "/cgroup.kill", "1").ok();
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (;;) {
    std::string pids = members(dir);
    if (pids.empty()) break;
    if (!has_kill) {
      // Kernels before 5.14: each member by hand, again until none is left (a
      // fork between reading and killing shows up on the next pass).
      std::istringstream in(pids);
      int pid;
      while (in >> pid) {
        if (pid > 1) ::kill(pid, SIGKILL);
      }
    }
    if (std::chrono::steady_clock::now() >= until) {
      return unavailable("processes still in " + dir + " after SIGKILL: " + pids.substr(0, 200));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kKillPollMs));
  }
  ::rmdir(dir.c_str());
  return Status();
}

void job_cgroup_remove_if_empty(const std::string& dir) {
  if (members(dir).empty()) ::rmdir(dir.c_str());
}

}  // namespace ferry
