#include "agents/lane_listener.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "agents/agent_server.h"
#include "base/file_util.h"
#include "base/private_dir.h"

namespace ferry {
namespace {

// Socket buffers for a lane: a 2 MiB chunk crosses in a few system calls
// (the kernel caps this at net.core.[rw]mem_max; fine).
constexpr int kLaneSocketBytes = 4 << 20;
/// Descriptors below this are closed in a lane's agent (as a detached job's supervisor does).
constexpr int kMaxInheritedFd = 1024;

std::string errno_text() { return std::strerror(errno); }

}  // namespace

LaneListener::~LaneListener() {
  stop_serving();
  if (fd_ < 0) return;
  ::close(fd_);
  struct stat st {};
  // Only our own socket: a newer agent may have taken the path over since.
  if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) ::unlink(path_.c_str());
}

Status LaneListener::listen(const std::string& path) {
  if (path.size() > kMaxLaneSocketPath) {
    return invalid_argument("lanes socket path is longer than " + std::to_string(kMaxLaneSocketPath) +
                            " bytes: " + path);
  }
  const std::string dir = dirname_of(path);
  // In a shared workdir another user could own or open this folder and rebind the
  // socket: lanes would then talk to their agent (review N7).
  FERRY_RETURN_IF_ERROR(make_owner_only_dir(dir).with_context("lanes socket folder"));
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return internal_error("socket: " + errno_text());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  // Take the path over: a socket left there belongs to an agent whose coordinator
  // is gone (or to a concurrent one of the same binary and workdir, serving alike).
  ::unlink(path.c_str());
  mode_t old_umask = ::umask(077);  // the socket the owner's only, whatever the caller's umask
  bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::umask(old_umask);
  if (!bound || ::listen(fd, 64) != 0) {
    Status s = unavailable("cannot listen on " + path + ": " + errno_text());
    ::close(fd);
    return s;
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  fd_ = fd;
  path_ = path;
  return Status();
}

Status LaneListener::accept_one(const std::string& workdir, double idle_exit_s) {
  int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (conn < 0) {
    if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) return Status();
    return internal_error("accept on " + path_ + ": " + errno_text());
  }
  // Only this user's processes (sshd's streamlocal forward runs as the user) may
  // start an agent here; the folder's mode alone would be one mistake from open.
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.uid != ::getuid()) {
    Status s = permission_denied("lanes socket " + path_ + ": refused a connection from uid " +
                                 std::to_string(peer.uid) + " (pid " + std::to_string(peer.pid) + ")");
    ::close(conn);
    return s;
  }
  int bytes = kLaneSocketBytes;
  // Past net.core.[rw]mem_max when allowed (CAP_NET_ADMIN), else up to it.
  if (::setsockopt(conn, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
    (void)::setsockopt(conn, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  if (::setsockopt(conn, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    (void)::setsockopt(conn, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  pid_t child = ::fork();
  if (child < 0) {
    Status s = unavailable("fork for a lane: " + errno_text());
    ::close(conn);
    return s;
  }
  if (child == 0) {
    // The middle process exits at once, so the server is reparented and never a zombie.
    if (::fork() != 0) _exit(0);
    // Hold none of the main agent's fds: its channel must end when it exits, and a
    // job's start lock that another thread holds right now must not live on here.
    int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    for (int fd = 3; fd < kMaxInheritedFd; ++fd)
      if (fd != conn) ::close(fd);
    _exit(AgentServer(workdir).serve(conn, conn, idle_exit_s));
  }
  ::close(conn);
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  return Status();
}

Status LaneListener::serve_in_background(const std::string& workdir, double idle_exit_s) {
  if (fd_ < 0) return failed_precondition("lanes socket: not listening");
  if (acceptor_.joinable()) return Status();
  if (::pipe2(wake_, O_CLOEXEC) != 0) return internal_error("pipe for the lanes thread: " + errno_text());
  acceptor_ = std::thread([this, workdir, idle_exit_s] { accept_loop(workdir, idle_exit_s); });
  return Status();
}

void LaneListener::stop_serving() {
  if (!acceptor_.joinable()) return;
  char byte = 0;
  while (::write(wake_[1], &byte, 1) < 0 && errno == EINTR) {
  }
  acceptor_.join();
  ::close(wake_[0]);
  ::close(wake_[1]);
  wake_[0] = wake_[1] = -1;
}

void LaneListener::accept_loop(const std::string& workdir, double idle_exit_s) {
  for (;;) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    int r = ::poll(p, 2, -1);
    if (r < 0 && errno != EINTR) return;
    if (r <= 0) continue;
    if (p[1].revents != 0) return;
    if (p[0].revents == 0) continue;
    // A lane's failure to start is the lane's: it falls back to an exec of its own.
    // A refused peer is said on stderr, which the coordinator keeps with the link.
    Status s = accept_one(workdir, idle_exit_s);
    if (!s.ok()) std::fprintf(stderr, "ferry-agent: %s\n", s.message().c_str());
  }
}

}  // namespace ferry
