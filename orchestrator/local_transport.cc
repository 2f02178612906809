#include "orchestrator/local_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "agents/file_util.h"

namespace ferry {

std::string agent_binary_path() {
  const char* env = std::getenv("FERRY_AGENT_BIN");
  if (env && *env) return env;
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "ferry-agent";
  buf[n] = 0;
  return dirname_of(buf) + "/ferry-agent";
}

LocalTransport::LocalTransport(std::string agent_path, std::string workdir)
    : agent_path_(std::move(agent_path)), workdir_(std::move(workdir)) {}

LocalTransport::~LocalTransport() { close(); }

Status LocalTransport::open() {
  close();
  if (::access(agent_path_.c_str(), X_OK) != 0) {
    return not_found("agent binary " + agent_path_ + " is missing or not executable (set FERRY_AGENT_BIN)");
  }
  FERRY_RETURN_IF_ERROR(make_dirs(workdir_));
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return errno_status("pipe", errno);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return errno_status("pipe", errno);
  }
  pid_t pid = ::fork();
  if (pid < 0) return errno_status("fork", errno);
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    // Keep the agent out of the coordinator's process group: a Ctrl-C in the
    // terminal is the coordinator's to handle, not the agent's.
    ::setpgid(0, 0);
    ::execl(agent_path_.c_str(), "ferry-agent", "serve", "--workdir", workdir_.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  pid_ = pid;
  to_agent_ = in[1];
  from_agent_ = out[0];
  return Status();
}

Result<size_t> LocalTransport::read_some(char* buf, size_t n, int timeout_ms) {
  if (from_agent_ < 0) return unavailable("local agent is not running");
  pollfd p{from_agent_, POLLIN, 0};
  int r = ::poll(&p, 1, timeout_ms);
  if (r < 0) {
    if (errno == EINTR) return size_t{0};
    return errno_status("poll", errno);
  }
  if (r == 0) return size_t{0};
  ssize_t got = ::read(from_agent_, buf, n);
  if (got < 0) {
    if (errno == EINTR || errno == EAGAIN) return size_t{0};
    return unavailable(std::string("local agent pipe: ") + std::strerror(errno));
  }
  if (got == 0) return unavailable("local agent exited");
  return static_cast<size_t>(got);
}

Status LocalTransport::write_all(const char* data, size_t n) {
  if (to_agent_ < 0) return unavailable("local agent is not running");
  size_t off = 0;
  while (off < n) {
    ssize_t w = ::write(to_agent_, data + off, n - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return unavailable(std::string("local agent pipe: ") + std::strerror(errno));
    off += static_cast<size_t>(w);
  }
  return Status();
}

void LocalTransport::close() {
  if (to_agent_ >= 0) ::close(to_agent_);
  if (from_agent_ >= 0) ::close(from_agent_);
  to_agent_ = from_agent_ = -1;
  if (pid_ > 0) {
    // The agent exits on EOF; give it a moment, then make sure.
    for (int i = 0; i < 200; ++i) {
      int st;
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      if (r == pid_ || r < 0) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
}

std::string LocalTransport::describe() const { return "local agent in " + workdir_; }

}  // namespace ferry
