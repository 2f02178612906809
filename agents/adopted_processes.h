// adopted_processes: the job supervisor as the subreaper of its job's processes
// (prctl PR_SET_CHILD_SUBREAPER), so that a stop reaches what left the job's
// process group where no cgroup can be had (job_cgroup.h; review-4 F6: a non-root
// user over SSH, whose session scope systemd does not delegate).
//
// A process that calls setsid() or daemonizes leaves the group a stop signals;
// once its parent is gone (the job killed, the daemon's double fork) the kernel
// gives it to the nearest subreaper, the supervisor, instead of init. So while
// the supervisor lives, everything the job started is its descendant, and a
// cancel, a timeout or a newer attempt's fence kills the adopted ones after the
// group. Not reached: what another daemon starts for the job (`docker run`,
// `systemd-run`), and what an attempt that ended on its own left running once
// its supervisor has gone (only a cgroup holds those).
// Plain functions, for the supervisor's process.
#pragma once

#include <vector>

namespace ferry {

/// Makes the calling process the subreaper of its descendants; false where the
/// kernel refuses (before Linux 3.4).
bool adopt_orphans();

/// The live children of `parent` (zombies not counted), from /proc.
std::vector<int> children_of(int parent);

/// Reaps the caller's ended children without waiting; true, with its wait status
/// in `*job_status`, when `job` was among them.
bool reap_children(int job, int* job_status);

/// Kills every child of the caller (its own group too, where it leads one), reaps
/// them, and repeats for what they leave to be adopted in turn, until none is left
/// or `wait_ms` has passed. Called once the job itself is reaped: every child left
/// is one the job started.
void kill_adopted(int wait_ms);

}  // namespace ferry
