// job_cgroup: a cgroup v2 of its own per job attempt, so that stopping an attempt
// stops everything it started (review F6).
//
// A process group is escaped by any process that calls setsid() or daemonizes (a
// trainer's launcher, `docker run`, `nohup … &` under setsid): a fence that kills
// the group leaves those running, and two attempts then write one checkpoint
// folder. A cgroup is not escaped by an unprivileged process: killing it
// (cgroup.kill, or SIGKILL to each member where the kernel lacks cgroup.kill)
// reaches every descendant.
//
// The attempt's cgroup is made under the agent's own (from /proc/self/cgroup, on
// the cgroup2 mount), which works as root and in a delegated subtree (a systemd
// user service). Where that is not writable (a login session's scope, cgroup v1
// only), create() says why, and the job's supervisor adopts what leaves its
// process group instead (adopted_processes.h).
// Plain functions; any thread (the supervisor calls them after fork).
#pragma once

#include <string>

#include "base/status.h"

namespace ferry {

/// Creates a cgroup named `name` under the caller's own cgroup v2; returns its
/// folder, or the reason there is none.
Result<std::string> job_cgroup_create(const std::string& name);

/// Moves process `pid` (0: the caller) into the cgroup at `dir`.
Status job_cgroup_join(const std::string& dir, int pid);

/// Kills every process in the cgroup at `dir` and waits (up to `wait_ms`) until
/// it is empty, then removes it. OK if `dir` is gone already.
Status job_cgroup_kill(const std::string& dir, int wait_ms);

/// Removes the cgroup at `dir` if nothing is left in it (a job that ended and
/// left no process behind); a cgroup still populated is kept for the next fence.
void job_cgroup_remove_if_empty(const std::string& dir);

}  // namespace ferry
