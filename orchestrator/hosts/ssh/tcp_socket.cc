#include "orchestrator/hosts/ssh/tcp_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

Status set_int_opt(int fd, int level, int name, int value, const char* what) {
  if (setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
    return errno_status(std::string("setsockopt(") + what + ")", errno);
  }
  return Status();
}

Status set_nonblocking(int fd, bool on) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0) return errno_status("fcntl(F_GETFL)", errno);
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (fcntl(fd, F_SETFL, flags) != 0) return errno_status("fcntl(F_SETFL)", errno);
  return Status();
}

// One non-blocking connect attempt bounded by `deadline`. Returns the fd or the reason.
Result<int> connect_one(const addrinfo* ai, Clock::time_point deadline, bool* refused) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
  if (fd < 0) return errno_status("socket", errno);
  // Options go on before connect so even the handshake is covered.
  Status s = set_dead_link_options(fd);
  if (!s.ok()) {
    ::close(fd);
    return s;
  }
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
    int err = errno;
    ::close(fd);
    *refused = err == ECONNREFUSED;
    return errno_status("connect", err);
  }
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      ::close(fd);
      return Status(StatusCode::kDeadlineExceeded, "connect timed out");
    }
    pollfd p{fd, POLLOUT, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return errno_status("poll", err);
    }
    if (n == 0) continue;  // re-check the deadline
    int soerr = 0;
    socklen_t len = sizeof(soerr);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) soerr = errno;
    if (soerr != 0) {
      ::close(fd);
      *refused = soerr == ECONNREFUSED;
      return errno_status("connect", soerr);
    }
    break;
  }
  s = set_nonblocking(fd, false);
  if (!s.ok()) {
    ::close(fd);
    return s;
  }
  return fd;
}

}  // namespace

Status set_dead_link_options(int fd) {
  FERRY_RETURN_IF_ERROR(set_int_opt(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE"));
  FERRY_RETURN_IF_ERROR(set_int_opt(fd, IPPROTO_TCP, TCP_KEEPIDLE, kTcpKeepIdleS, "TCP_KEEPIDLE"));
  FERRY_RETURN_IF_ERROR(set_int_opt(fd, IPPROTO_TCP, TCP_KEEPINTVL, kTcpKeepIntvlS, "TCP_KEEPINTVL"));
  FERRY_RETURN_IF_ERROR(set_int_opt(fd, IPPROTO_TCP, TCP_KEEPCNT, kTcpKeepCnt, "TCP_KEEPCNT"));
  FERRY_RETURN_IF_ERROR(
      set_int_opt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, kTcpUserTimeoutMs, "TCP_USER_TIMEOUT"));
  FERRY_RETURN_IF_ERROR(set_int_opt(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY"));
  return Status();
}

Result<int> tcp_connect(const std::string& host, int port, int timeout_ms, bool* nobody_there) {
  bool ignored = false;
  if (nobody_there == nullptr) nobody_there = &ignored;
  *nobody_there = false;
  const std::string where = host + ":" + std::to_string(port);
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_ADDRCONFIG;
  addrinfo* res = nullptr;
  const std::string port_str = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), port_str.c_str(), &hints, &res);
  if (rc != 0) {
    *nobody_there = rc != EAI_AGAIN;  // a temporary resolver failure is not an answer
    return unavailable("cannot resolve " + host + ": " + gai_strerror(rc));
  }
  Status last = unavailable("no address for " + host);
  bool all_refused = true;
  for (const addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    bool refused = false;
    Result<int> fd = connect_one(ai, deadline, &refused);
    all_refused = all_refused && refused;
    if (fd.ok()) {
      freeaddrinfo(res);
      return fd;
    }
    last = fd.status();
    if (last.code() == StatusCode::kDeadlineExceeded) break;
  }
  freeaddrinfo(res);
  if (last.code() == StatusCode::kDeadlineExceeded) {
    return Status(StatusCode::kDeadlineExceeded,
                  "connect to " + where + " timed out after " + std::to_string(timeout_ms) + " ms");
  }
  // Refused, unreachable, ...: the host or link is down, worth retrying later.
  *nobody_there = all_refused;
  return unavailable(last.message() + " (" + where + ")");
}

}  // namespace ferry
