// Starting a job detached from the agent, so it survives the agent, the SSH
// session and the coordinator dying (docs/DESIGN.md §3 step 3).
//
// The agent double-forks a supervisor into a new session; the supervisor starts
// the command's shell (job_shell.h) in its own process group with stdout and stderr into a pipe it
// keeps in the journal's log within `log_max` (capped_log.h),
// enforces the timeout on the whole group, and writes exit.json (temp + rename)
// when the job ends. The supervisor is a fork of the agent, so it needs no other
// binary on the host. Call from the agent's single thread.
#pragma once

#include <map>
#include <string>

#include "agents/job_journal.h"
#include "base/capped_log.h"
#include "base/status.h"

namespace ferry {

struct LaunchSpec {
  std::string command;                     // the script, run with `shell`
  std::string shell;                       // "" (bash -eo pipefail, else sh -e), "bash" or "sh" (job_shell.h)
  std::string bash;                        // bash's path on this host; "" = none
  std::map<std::string, std::string> env;  // added to the agent's environment
  std::string cwd;                         // absolute
  double timeout_s = 0;                    // 0 = none
  double kill_grace_s = 5;                 // SIGTERM → SIGKILL on timeout/cancel
  int64_t log_max = kDefaultLogMaxBytes;  // the log keeps its head and tail within this
  int start_lock_fd = -1;                  // held by the supervisor until pid.json is written
};

/// Starts the job; returns its pid (= its process group id) once pid.json is on disk.
Result<int> launch_detached(const JobPaths& paths, const LaunchSpec& spec);

/// Asks a running attempt to stop: marks it cancelled, then signals its group.
Status signal_job(const JobPaths& paths, bool hard);

}  // namespace ferry
