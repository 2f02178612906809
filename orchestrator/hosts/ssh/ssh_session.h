// SshSession: one authenticated SSH connection to one host (libssh 0.10).
//
// connect() does, in order: read the ssh client config (HostName/User/Port/
// IdentityFile/ProxyJump), open the TCP socket ourselves (tcp_socket.h, so dead
// links are noticed in seconds) and hand it to libssh with SSH_OPTIONS_FD, run the
// handshake, check the host key against known_hosts *before any authentication*
// (unknown or changed keys are refused with the fingerprint and how to trust it;
// an unknown key is recorded only with trust_first_use, in ferry's own
// known_hosts, one connection at a time), then authenticate with
// ssh_userauth_publickey_auto (ssh-agent, the target's identity, config and default
// keys). All of it is bounded by target.connect_timeout_ms.
//
// ProxyJump: libssh 0.10 turns it into a ProxyCommand running the OpenSSH client
// (`ssh -W [%h]:%p jump`); then libssh owns the connection (a socketpair to that
// process), our keepalive options cannot apply, and dead links are noticed only by
// the read/write timeouts.
//
// Thread contract: one thread creates, uses and destroys a session and all its
// channels (libssh forbids sharing). Different sessions may live on different
// threads. The session owns the libssh session and the socket; channels returned by
// open_exec() borrow the session and must be destroyed first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "orchestrator/hosts/ssh/ssh_exec_channel.h"
#include "orchestrator/hosts/ssh/ssh_target.h"

struct ssh_session_struct;

namespace ferry {

/// Default bound for run().
constexpr int kDefaultRunTimeoutMs = 60000;
/// Bound on the polite goodbye (channel close, disconnect message) in disconnect().
constexpr int kCloseTimeoutMs = 2000;

/// What a command printed and how it ended.
struct ExecResult {
  int exit_status = -1;  ///< -1: killed by a signal or no status sent
  std::string out;
  std::string err;
};

class SshSession {
 public:
  explicit SshSession(SshTarget target);
  ~SshSession();
  SshSession(const SshSession&) = delete;
  SshSession& operator=(const SshSession&) = delete;

  /// Connects, verifies the host key, authenticates. Errors:
  /// kUnavailable / kDeadlineExceeded (network), kPermissionDenied (host key
  /// refused, authentication failed), kNotFound (identity file missing).
  Status connect();

  bool connected() const;

  /// Opens an exec channel running `command`, POSIX sh text, under /bin/sh
  /// whatever the user's login shell (`exec /bin/sh -c '...'`, login_shell_command.h;
  /// one line only). Quote every value in it (shell_quote.h).
  Result<std::unique_ptr<SshExecChannel>> open_exec(const std::string& command);

  /// Opens a `direct-streamlocal` channel to the unix socket at the absolute
  /// `path` on the host: a byte stream like an exec channel's, but sshd starts no
  /// shell for it (so no login rc runs). Fails when the server forbids it
  /// (AllowStreamLocalForwarding no) or nothing listens there.
  Result<std::unique_ptr<SshExecChannel>> open_unix_socket(const std::string& path);

  /// Runs `command`, feeds it `input` then EOF, and collects stdout, stderr and the
  /// exit status, all within `timeout_ms`. A non-zero exit is *not* an error here.
  Result<ExecResult> run(const std::string& command, const std::string& input = {},
                         int timeout_ms = kDefaultRunTimeoutMs);

  /// Ends the session. Idempotent; bounded by kCloseTimeoutMs. Channels still alive
  /// become unusable (their calls fail).
  void disconnect();

  /// "ssh root@198.18.0.2:22" (resolved values once connected, the target before).
  std::string describe() const;
  /// After a failed connect(): the host's name does not resolve, or every address
  /// refused the TCP connection (an answer, not a silence).
  bool nobody_there() const { return nobody_there_; }

  const SshTarget& target() const { return target_; }
  /// After connect(): the values actually used (from the target and the ssh config).
  const std::string& host() const { return host_; }
  int port() const { return port_; }
  const std::string& user() const { return user_; }
  /// After connect(): the server's key as "ED25519 SHA256:...".
  const std::string& host_key_fingerprint() const { return fingerprint_; }

  /// The connection's descriptor, readable when bytes for any channel may have come
  /// (to wait on many channels at once); -1 when not connected.
  int fd() const;
  /// The libssh handle, for SshExecChannel; nullptr when not connected.
  ssh_session_struct* raw() const { return session_; }
  /// Last libssh error text, for messages.
  std::string last_error() const;
  /// Marks the session dead (a channel saw the link break): later calls fail fast and
  /// disconnect() skips the goodbye that could only time out.
  void mark_broken() { broken_ = true; }
  /// Sets libssh's timeout for its own blocking waits (window, flush, exit status).
  void set_io_timeout_ms(int ms) { set_timeout_ms(ms); }
  bool broken() const { return broken_; }

 private:
  Status apply_options();
  Status verify_host_key();
  Status authenticate();
  void set_timeout_ms(int ms);
  Result<ssh_channel_struct*> new_channel();
  Status channel_failure(ssh_channel_struct* ch, StatusCode if_alive, const std::string& what);
  friend class SshExecChannel;
  void forget_channel(SshExecChannel* channel);

  SshTarget target_;
  ssh_session_struct* session_ = nullptr;
  int pending_fd_ = -1;  ///< our socket until libssh takes it in ssh_connect
  bool broken_ = false;
  bool authenticated_ = false;
  bool proxied_ = false;  ///< a ProxyCommand carries the connection
  bool nobody_there_ = false;  ///< the last connect() failed on a name that does not resolve, or refusals
  std::string host_;
  int port_ = 22;
  std::string user_;
  std::string fingerprint_;
  std::vector<SshExecChannel*> channels_;  ///< live channels, detached on disconnect()
};

}  // namespace ferry
