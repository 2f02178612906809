// LaneListener: the unix socket where a serving agent accepts the coordinator's
// data lanes (`ferry-agent serve --lanes-socket PATH`).
//
// Why: every exec over SSH starts the user's login shell, and real hosts' rc files
// (pyenv, conda, module init) cost tenths of a second each. A lane that opens an
// SSH `direct-streamlocal` channel to this socket starts no shell at all, so a copy
// with N lanes pays the host's rc once (the main link's exec), not N + 1 times.
//
// Each accepted connection is served by a fresh process (double fork, so nothing is
// left to reap) speaking the same frame protocol as stdin/stdout, with the same
// workdir: a lane behaves exactly like a lane whose agent was started by exec.
// The socket (0700) lives in a folder that must be the user's own with mode 0700
// (it is refused otherwise), and a peer of another uid is refused. Binding takes the path over from an older
// agent (one whose coordinator vanished); the destructor removes the path only if
// it is still ours.
//
// Lanes are accepted on a thread of their own (serve_in_background), not between the
// main agent's requests: a request that blocks for tens of seconds (a job.start
// waiting on its lock, a slow sbatch or squeue, fencing an older Slurm attempt) would
// otherwise leave every new lane unserved until the coordinator drops it as silent
// (review P5). That thread only accepts and forks; the lane's agent is a process of
// its own, holding none of the main agent's descriptors (a job's start lock above all).
#pragma once

#include <string>
#include <thread>

#include "base/status.h"

namespace ferry {

/// Longest unix socket path (sun_path holds 108 bytes with the NUL).
constexpr size_t kMaxLaneSocketPath = 107;

class LaneListener {
 public:
  LaneListener() = default;
  ~LaneListener();
  LaneListener(const LaneListener&) = delete;
  LaneListener& operator=(const LaneListener&) = delete;

  /// Binds and listens on `path`, creating its folder 0700; kPermissionDenied
  /// naming the folder when it is not the user's own with mode 0700.
  Status listen(const std::string& path);
  /// The listening fd, -1 when not listening.
  int fd() const { return fd_; }
  /// Accepts one pending connection and hands it to a new process that serves it
  /// with a fresh AgentServer on `workdir`. Errors are the accept's, and
  /// kPermissionDenied for a peer of another uid (closed unserved).
  Status accept_one(const std::string& workdir, double idle_exit_s);
  /// Accepts and serves lanes (accept_one) on a thread of its own until
  /// stop_serving() or the destructor; a failed accept is said on stderr.
  Status serve_in_background(const std::string& workdir, double idle_exit_s);
  /// Ends that thread and waits for it. Idempotent.
  void stop_serving();

 private:
  void accept_loop(const std::string& workdir, double idle_exit_s);

  int fd_ = -1;
  int wake_[2] = {-1, -1};  // a byte on wake_[1] ends the accept thread
  std::thread acceptor_;
  std::string path_;
  unsigned long long dev_ = 0, ino_ = 0;  // what we bound, so we never unlink another's
};

}  // namespace ferry
