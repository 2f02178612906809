// SshTransport: the AgentTransport over SSH: one SshSession and one exec channel
// running `ferry-agent serve --workdir <workdir> --lanes-socket <path>` on the host.
//
// open() connects (host key checked before auth, see ssh_session.h), installs the
// agent binary when missing (agent_bootstrap.h), and starts it; the channel's
// stdin/stdout are the byte stream. For tests and tools the remote command can be
// overridden (e.g. `cat` as an echo server), which skips the bootstrap.
//
// Data lanes (open_lane) are more channels of the same session: a
// `direct-streamlocal` channel to the agent's lanes socket (agents/lane_listener.h;
// sshd starts no login shell for it), or, where the server forbids that, an exec of
// another agent on the same session. So a host costs one TCP connection and one
// handshake however many lanes a copy uses (review F19: 64 streams used to be 64
// sessions, and sshd's MaxStartups dropped their handshakes).
//
// Reads go straight into the caller's buffer (HostConnection reads a chunk's body
// in place): the count passed to ssh_channel_read is also the receive window libssh
// advertises, so callers that want speed read with large counts.
//
// Thread contract: as AgentTransport: one thread opens, reads, writes and closes
// this transport and its lanes (it owns the libssh session); lanes are closed first.
// Every call is bounded (connect timeout, read timeout, write stall timeout,
// TCP_USER_TIMEOUT on a dead link).
#pragma once

#include <memory>
#include <string>

#include "orchestrator/hosts/agent_transport.h"
#include "orchestrator/hosts/ssh/ssh_exec_channel.h"
#include "orchestrator/hosts/ssh/ssh_session.h"
#include "orchestrator/hosts/ssh/ssh_target.h"

namespace ferry {

class SshTransport : public AgentTransport {
 public:
  /// `local_agent_path`: the ferry-agent binary to install and run.
  /// `remote_command`: if not empty, run this instead (no bootstrap, no lanes), as is.
  SshTransport(SshTarget target, std::string local_agent_path, std::string remote_command = {});
  ~SshTransport() override;

  Status open() override;
  Result<size_t> read_some(char* buf, size_t n, int timeout_ms) override;
  Status write_all(const char* data, size_t n) override;
  void close() override;
  std::string describe() const override;
  bool nobody_there() const override { return nobody_there_; }
  Result<std::unique_ptr<AgentTransport>> open_lane() override;
  int poll_fd() const override;

  /// After open(): where the agent lives on the host ("" with a remote_command).
  const std::string& remote_agent_path() const { return remote_agent_path_; }
  /// After open(): whether open() had to upload the agent.
  bool uploaded_agent() const { return uploaded_agent_; }
  /// After open(): the agent's lanes socket on the host ("" when it has none).
  const std::string& lanes_socket_path() const { return lanes_socket_path_; }
  /// The last stderr of the remote command, for error messages.
  std::string remote_stderr() const;

 private:
  Status start_command(const std::string& command);
  Result<std::string> run_probe(const std::string& probe);

  SshTarget target_;
  std::string local_agent_path_;
  std::string remote_command_;
  std::string remote_agent_path_;
  std::string lanes_socket_path_;
  std::string lane_probe_;  // starts another agent by exec, for a lane without the socket
  bool uploaded_agent_ = false;
  std::unique_ptr<SshSession> session_;
  bool nobody_there_ = false;  // the last open(): see SshSession::nobody_there
  std::unique_ptr<SshExecChannel> channel_;  // destroyed before session_
};

}  // namespace ferry
