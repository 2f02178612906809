#include "agents/adopted_processes.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "agents/job_journal.h"
#include "base/clock.h"

namespace ferry {
namespace {

constexpr useconds_t kKillRoundUs = 5000;

// Whether `pid` is a live child of `parent` (not a zombie), by /proc/PID/stat.
bool live_child_of(int pid, int parent) {
  const std::vector<std::string> f = process_stat_fields(pid);
  return f.size() >= 2 && f[0] != "Z" && f[0] != "X" && std::atoi(f[1].c_str()) == parent;
}

}  // namespace

bool adopt_orphans() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

std::vector<int> children_of(int parent) {
  std::vector<int> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    if (live_child_of(static_cast<int>(pid), parent)) out.push_back(static_cast<int>(pid));
  }
  ::closedir(proc);
  return out;
}

bool reap_children(int job, int* job_status) {
  bool reaped_job = false;
  int status = 0;
  for (pid_t r; (r = ::waitpid(-1, &status, WNOHANG)) > 0;) {
    if (r == job) {
      *job_status = status;
      reaped_job = true;
    }
  }
  return reaped_job;
}

void kill_adopted(int wait_ms) {
  const double until = mono_s() + wait_ms / 1000.0;
  int ignored = 0;
  for (;;) {
    const std::vector<int> adopted = children_of(::getpid());
    if (adopted.empty() || mono_s() >= until) return;
    for (int pid : adopted) {
      // Its own group first (a setsid'd launcher's workers), then itself.
      if (::getpgid(pid) == pid) ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    ::usleep(kKillRoundUs);  // what they leave is adopted once they are gone
    (void)reap_children(0, &ignored);
  }
}

}  // namespace ferry
