// AgentTransport: a byte stream to a running `ferry-agent serve` on one host.
//
// Implementations: a local subprocess over pipes (local_transport.h) and an exec
// channel over libssh (ssh/ssh_transport.h). The framed protocol (protocol/)
// rides on top and knows nothing of which one carries it.
//
// A transport may carry data lanes (open_lane): more streams to the same host, each
// to an agent of its own, over the same link where it can (SSH: channels of one
// session), so a copy's parallel streams cost no extra connection or thread.
//
// Thread contract: one object and its lanes are created, opened, read, written and
// closed by ONE thread (libssh forbids sharing a session), the host's connection
// thread (host_connection.h); lanes are closed before the transport that opened them.
// Every call may block, bounded by its timeout.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/status.h"

namespace ferry {

class AgentTransport {
 public:
  virtual ~AgentTransport() = default;

  /// Connects (if remote), makes sure the agent binary is there, and starts
  /// `ferry-agent serve`. Blocking, bounded by the transport's connect timeout.
  virtual Status open() = 0;

  /// Reads up to `n` bytes into `buf`. Returns 0 when nothing arrived within
  /// `timeout_ms`; an error Status when the stream ended or the link broke.
  virtual Result<size_t> read_some(char* buf, size_t n, int timeout_ms) = 0;

  /// Writes all `n` bytes or fails.
  virtual Status write_all(const char* data, size_t n) = 0;

  /// Tears the stream down; the agent exits, detached jobs keep running. Idempotent.
  virtual void close() = 0;

  /// For messages: "local pipe to /tmp/w" or "ssh root@198.18.0.2:22".
  virtual std::string describe() const = 0;

  /// After a failed open(): the failure was an answer that there is no such host
  /// here (a name that does not resolve, a refused connection) rather than silence
  /// or a later step failing. HostConnection gives up on such a host at the first try.
  virtual bool nobody_there() const { return false; }

  /// After open(): a data lane, a new stream to a fresh agent on the same host
  /// (same protocol, same workdir). kFailedPrecondition where this transport has none
  /// (the caller then sends the lane's calls on this stream). Returns at once: the
  /// lane may still be opening (an agent started by exec behind a login shell), and
  /// the caller finishes it with poll_open(), so no stream waits on another's opening.
  virtual Result<std::unique_ptr<AgentTransport>> open_lane() {
    return failed_precondition(describe() + ": carries no data lanes");
  }

  /// A lane from open_lane(): takes its opening on with what has arrived, without
  /// waiting (poll_fd turns readable when there is news). true: open, it may be written
  /// and read; false: still opening; an error: it cannot open (nothing written to it
  /// reached an agent). Nothing may be written to a lane before it is open.
  virtual Result<bool> poll_open() { return true; }

  /// A descriptor that turns readable when bytes for this transport may have arrived,
  /// so one thread can wait on it and its lanes at once (lanes of one SSH session
  /// share their socket); -1: none, read_some's timeout is the only way to wait.
  virtual int poll_fd() const { return -1; }
};

}  // namespace ferry
