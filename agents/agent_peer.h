// AgentPeer: a blocking client of another host's `ferry-agent serve`, reached
// through a command whose stdin/stdout carry the frame protocol — for a direct
// copy, the source host's own `ssh DEST 'exec AGENT serve …'` (agents/push.h).
//
// Requests may be pipelined: send() several, then receive() their replies, which
// the agent returns in order. Heartbeat events are skipped. Every wait has a
// deadline; when the link or the command dies, calls fail with kUnavailable and
// the message carries what the command said on stderr (ssh's own diagnosis:
// "Permission denied (publickey)", "Host key verification failed"...).
// One thread uses an object.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/child_process.h"
#include "protocol/frame.h"

namespace ferry {

class AgentPeer {
 public:
  /// Runs `argv`, says hello within `hello_timeout_ms` and checks the protocol version.
  /// With a `ready_marker`, the frames start only after the first line holding it:
  /// what comes before (a login rc's greeting on the remote stdout) is skipped.
  static Result<std::unique_ptr<AgentPeer>> start(const std::vector<std::string>& argv, int hello_timeout_ms,
                                                  const std::string& ready_marker = "");

  /// Writes one request; its reply comes back from receive() in order.
  Status send(const std::string& op, const nlohmann::json& args, std::string body, int timeout_ms);
  /// The next reply (kReply) or error (kError) frame, waiting at most `timeout_ms`.
  Result<protocol::Frame> receive(int timeout_ms);
  /// send() then receive(); an error frame becomes its Status.
  Result<protocol::Frame> call(const std::string& op, const nlohmann::json& args, int timeout_ms,
                               std::string body = {});

  /// What the command wrote on stderr, last lines first trimmed to a message.
  std::string diagnosis();
  /// Ends the command (EOF, then a kill after a grace period).
  void close();
  const nlohmann::json& hello() const { return hello_; }

 private:
  explicit AgentPeer(std::unique_ptr<ChildProcess> child) : child_(std::move(child)) {}
  Status broken(const std::string& what);
  Status skip_to_marker(const std::string& marker, int timeout_ms);

  std::unique_ptr<ChildProcess> child_;
  protocol::FrameDecoder decoder_;
  std::vector<char> buf_ = std::vector<char>(1 << 16);
  uint32_t next_id_ = 1;
  nlohmann::json hello_;
};

}  // namespace ferry
