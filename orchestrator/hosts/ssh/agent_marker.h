// AgentMarker: the line an agent's start command prints before the agent takes its
// channel over: "FERRY-AGENT-READY <absolute workdir>", FERRY-AGENT-MISSING, or
// kAgentUnsafe (agent_bootstrap.h); read as its bytes arrive.
//
// Why: an agent started by exec runs the user's login shell first, and rc files
// (conda, module init) may take seconds. The main link's start waits for the marker
// (read_marker); a data lane opened by exec must not make the host's one connection
// thread wait (review P5), so its opening takes the marker on with advance() among the
// thread's other reads, never waiting. Bytes are read one at a time, so nothing after
// the marker is consumed: the agent's frames follow it. What the rc prints before it
// (a greeting, a `conda activate` note) is skipped; too much of it will not heal by
// retrying, so it fails with the cause (review F20.6).
//
// Thread contract: as SshExecChannel: the thread that owns the session.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "base/status.h"
#include "orchestrator/hosts/ssh/ssh_exec_channel.h"

namespace ferry {

inline constexpr char kAgentReady[] = "FERRY-AGENT-READY ";
inline constexpr char kAgentMissing[] = "FERRY-AGENT-MISSING\n";
/// How long a start command may take to print its marker.
constexpr int kMarkerTimeoutMs = 30000;
/// Most bytes a login shell may print before the marker.
constexpr size_t kMaxMarkerBytes = 8192;

/// A read on an agent's channel: the end of its output is the end of the link
/// (kUnavailable naming `who`, the command and its stderr's tail).
Result<size_t> read_agent_channel(SshExecChannel& ch, const std::string& who, char* buf, size_t n, int timeout_ms);

class AgentMarker {
 public:
  /// `who` names the host in errors; the kMarkerTimeoutMs deadline starts now.
  explicit AgentMarker(std::string who);

  /// Reads what has arrived, waiting up to `wait_ms` for it: true once the marker's
  /// line is read (line()); an error past the deadline, at the channel's end, or after
  /// kMaxMarkerBytes of other output.
  Result<bool> advance(SshExecChannel& ch, int wait_ms);

  /// The marker and the rest of its line, newline included, once advance() said true.
  const std::string& line() const { return marker_; }

 private:
  Status too_chatty() const;

  std::string who_;
  std::chrono::steady_clock::time_point deadline_;
  std::string line_, skipped_, marker_;
};

/// Waits for the marker on `ch` (kMarkerTimeoutMs at most) and returns its line.
Result<std::string> read_marker(SshExecChannel& ch, const std::string& who);

}  // namespace ferry
