// AgentTransport: a byte stream to a running `ferry-agent serve` on one host.
//
// Implementations: a local subprocess over pipes (local_transport.h) and an exec
// channel over libssh (ssh/ssh_transport.h). The framed protocol (protocol/)
// rides on top and knows nothing of which one carries it.
//
// Thread contract: one object is created, opened, read, written and closed by ONE
// thread (libssh forbids sharing a session), the host's connection thread
// (host_connection.h). Every call may block, bounded by its timeout.
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
};

}  // namespace ferry
