// SshTransport: the AgentTransport over SSH: one SshSession and one exec channel
// running `ferry-agent serve --workdir <workdir>` on the host.
//
// open() connects (host key checked before auth, see ssh_session.h), installs the
// agent binary when missing (agent_bootstrap.h), and starts it; the channel's
// stdin/stdout are the byte stream. For tests and tools the remote command can be
// overridden (e.g. `cat` as an echo server), which skips the bootstrap.
//
// Reads go straight into the caller's buffer (HostConnection reads a chunk's body
// in place): the count passed to ssh_channel_read is also the receive window libssh
// advertises, so callers that want speed read with large counts.
//
// Thread contract: as AgentTransport: one thread opens, reads, writes and closes
// (it owns the libssh session). Every call is bounded (connect timeout, read
// timeout, write stall timeout, TCP_USER_TIMEOUT on a dead link).
#pragma once

#include <memory>
#include <string>

#include "orchestrator/agent_transport.h"
#include "orchestrator/ssh/lane_socket.h"
#include "orchestrator/ssh/ssh_exec_channel.h"
#include "orchestrator/ssh/ssh_session.h"
#include "orchestrator/ssh/ssh_target.h"

namespace ferry {

/// How long a data lane waits for its host's main link to publish the lanes socket.
constexpr int kLaneSocketWaitMs = 10000;

class SshTransport : public AgentTransport {
 public:
  /// `local_agent_path`: the ferry-agent binary to install and run.
  /// `remote_command`: if not empty, run this instead (no bootstrap), as is.
  /// `lanes`: this host's LaneSocket (null: none); `data_lane`: this transport is a
  /// data lane (it uses the socket) rather than the main link (which publishes it).
  SshTransport(SshTarget target, std::string local_agent_path, std::string remote_command = {},
               std::shared_ptr<LaneSocket> lanes = nullptr, bool data_lane = false);
  ~SshTransport() override;

  Status open() override;
  Result<size_t> read_some(char* buf, size_t n, int timeout_ms) override;
  Status write_all(const char* data, size_t n) override;
  void close() override;
  std::string describe() const override;
  bool nobody_there() const override { return nobody_there_; }

  /// After open(): where the agent lives on the host ("" with a remote_command).
  const std::string& remote_agent_path() const { return remote_agent_path_; }
  /// After open(): whether open() had to upload the agent.
  bool uploaded_agent() const { return uploaded_agent_; }
  /// After open(): whether this lane rides the main agent's lanes socket (no exec).
  bool via_lane_socket() const { return via_lane_socket_; }
  /// The last stderr of the remote command, for error messages.
  std::string remote_stderr() const;

 private:
  Status start_command(const std::string& command);
  Result<std::string> read_marker();
  Result<std::string> run_probe(const std::string& probe);
  bool open_lane_channel();

  SshTarget target_;
  std::string local_agent_path_;
  std::string remote_command_;
  std::string remote_agent_path_;
  bool uploaded_agent_ = false;
  std::shared_ptr<LaneSocket> lanes_;
  bool data_lane_ = false;
  bool via_lane_socket_ = false;
  std::unique_ptr<SshSession> session_;
  bool nobody_there_ = false;  // the last open(): see SshSession::nobody_there
  std::unique_ptr<SshExecChannel> channel_;  // destroyed before session_
};

}  // namespace ferry
