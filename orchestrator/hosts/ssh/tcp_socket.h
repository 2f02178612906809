// tcp_socket: the TCP connection an SSH session rides on, opened by us (not libssh)
// so that dead links are noticed by the kernel within seconds.
//
// libssh 0.10 has no ServerAlive probes, and a blocking read on a silently dead
// link would wait for the kernel's default ~15 minutes (tcp_retries2). With
// keepalive every kTcpKeepIntvlS after kTcpKeepIdleS of silence and
// TCP_USER_TIMEOUT, an idle *or* busy connection over a cut link errors out within
// kDeadLinkDetectS. Free functions; any thread; the caller owns the returned fd.
#pragma once

#include <string>

#include "base/status.h"

namespace ferry {

/// Silence before the first keepalive probe.
constexpr int kTcpKeepIdleS = 5;
/// Between keepalive probes.
constexpr int kTcpKeepIntvlS = 2;
/// Unanswered probes before the kernel gives up (when TCP_USER_TIMEOUT is not hit first).
constexpr int kTcpKeepCnt = 3;
/// Longest time sent data may stay unacknowledged (and, with keepalive on, the
/// longest silence once probing started) before the connection is dropped.
constexpr int kTcpUserTimeoutMs = 10000;
/// Upper bound on noticing a dead link: idle 5 s + probes until 10 s of silence,
/// or 10 s of unacknowledged data, plus slack for the retransmit timer.
constexpr int kDeadLinkDetectS = 15;

/// Connects to host:port (numeric or resolvable), trying each address until
/// `timeout_ms` runs out, and applies the keepalive options above plus TCP_NODELAY.
/// The fd is returned in blocking mode with close-on-exec set.
/// Note: name resolution itself (getaddrinfo) is not bounded by the timeout.
/// `nobody_there`, when given, says whether the failure was an answer rather than
/// silence: the name does not resolve, or every address refused the connection.
Result<int> tcp_connect(const std::string& host, int port, int timeout_ms, bool* nobody_there = nullptr);

/// Applies SO_KEEPALIVE, TCP_KEEPIDLE/INTVL/CNT, TCP_USER_TIMEOUT and TCP_NODELAY.
Status set_dead_link_options(int fd);

}  // namespace ferry
