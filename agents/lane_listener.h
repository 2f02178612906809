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
// it is still ours. Single-threaded, like the agent.
#pragma once

#include <string>

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

 private:
  int fd_ = -1;
  std::string path_;
  unsigned long long dev_ = 0, ino_ = 0;  // what we bound, so we never unlink another's
};

}  // namespace ferry
