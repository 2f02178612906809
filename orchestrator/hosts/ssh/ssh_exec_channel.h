// SshExecChannel: one `exec` channel on an SshSession: a remote command's stdin,
// stdout, stderr and exit status.
//
// Thread contract: belongs to the thread that owns its SshSession (libssh forbids
// sharing a session or its channels between threads). It must be destroyed before
// that session; SshSession::disconnect() invalidates it (later calls fail cleanly).
//
// Every call is bounded: reads by their timeout, writes by kWriteStallTimeoutMs of
// no progress (a peer that stops reading) and, on a dead link, by the socket's
// TCP_USER_TIMEOUT (tcp_socket.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "base/status.h"

struct ssh_channel_struct;

namespace ferry {

class SshSession;

/// A write that moves no byte for this long fails: the remote stopped reading.
constexpr int kWriteStallTimeoutMs = 60000;
/// Largest single ssh_channel_write; sshd's window per channel is 2 MiB anyway.
constexpr size_t kWriteChunkBytes = 256 * 1024;
/// stderr kept for error messages (the newest bytes win).
constexpr size_t kStderrTailBytes = 64 * 1024;
/// While stdout flows, stderr is drained at most this often.
constexpr int kStderrDrainEveryMs = 100;

class SshExecChannel {
 public:
  SshExecChannel(SshSession* session, ssh_channel_struct* channel, std::string command);
  ~SshExecChannel();
  SshExecChannel(const SshExecChannel&) = delete;
  SshExecChannel& operator=(const SshExecChannel&) = delete;

  /// Reads up to `n` stdout bytes. Returns 0 when nothing came within `timeout_ms`
  /// *or* at end of stream (then at_eof() is true); an error when the link broke.
  /// `n` is also the receive window libssh advertises, so large reads are fast reads.
  /// Drains stderr (non-blocking) when nothing came and every kStderrDrainEveryMs.
  Result<size_t> read_some(char* buf, size_t n, int timeout_ms);

  /// Reads up to `n` stderr bytes without waiting.
  Result<size_t> read_stderr_nonblocking(char* buf, size_t n);

  /// Writes all bytes (in kWriteChunkBytes pieces) or fails.
  Status write_all(const char* data, size_t n);

  /// Closes the remote command's stdin.
  Status send_eof();

  /// True once the remote closed stdout and every byte was read.
  bool at_eof() const;

  /// Waits (bounded) for the remote command to exit; its status, or -1 if it died
  /// by a signal or none was sent.
  Result<int> exit_status(int timeout_ms);

  /// The last kStderrTailBytes of stderr seen so far.
  const std::string& stderr_tail() const { return stderr_tail_; }

  /// Closes and frees the channel. Idempotent; bounded.
  void close();

  const std::string& command() const { return command_; }

 private:
  friend class SshSession;
  /// Called by SshSession::disconnect(): libssh frees the channel with the session.
  void detach() { channel_ = nullptr; }

  Status error_status(const std::string& what) const;
  void drain_stderr();

  SshSession* session_;
  ssh_channel_struct* channel_;
  std::string command_;
  std::string stderr_tail_;
  std::chrono::steady_clock::time_point next_stderr_drain_{};
  bool broken_ = false;
};

}  // namespace ferry
