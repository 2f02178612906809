#include "agents/capped_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ferry {
namespace {

constexpr size_t kReadBytes = 256 << 10;
constexpr int kPollMs = 1000;  // how often a quiet pipe checks whether the command ended

volatile sig_atomic_t g_child = 0;

void pass_on(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

int usage() {
  std::fprintf(stderr, "usage: ferry-agent cap-log --max BYTES LOG -- COMMAND...\n");
  return 2;
}

// The child: the command, its stdout and stderr on `out`. Never returns.
[[noreturn]] void exec_command(char** argv, int out) {
  ::dup2(out, 1);
  ::dup2(out, 2);
  ::signal(SIGPIPE, SIG_DFL);
  ::execvp(argv[0], argv);
  std::string msg = std::string("ferry: exec ") + argv[0] + " failed: " + std::strerror(errno) + "\n";
  (void)!::write(2, msg.data(), msg.size());
  _exit(127);
}

// Keeps the pipe's bytes until the child ends, then what the pipe still holds.
int keep_until_exit(pid_t child, int from, CappedLogWriter* log) {
  std::string buf(kReadBytes, '\0');
  bool open = true;
  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(child, &status, open ? WNOHANG : 0);
    if (r == child) break;
    if (r < 0 && errno != EINTR) return 127;
    pollfd p = {from, POLLIN, 0};
    if (open && ::poll(&p, 1, kPollMs) > 0) open = forward_log(from, log, &buf);
  }
  if (open) {
    ::fcntl(from, F_SETFL, O_NONBLOCK);
    while (forward_log(from, log, &buf)) {
    }
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

bool forward_log(int fd, CappedLogWriter* log, std::string* buf) {
  ssize_t n = ::read(fd, buf->data(), buf->size());
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) {
    if (n == 0) errno = 0;
    return false;
  }
  int64_t before = log->size();
  if (!log->append(buf->data(), static_cast<size_t>(n)).ok()) (void)log->skip(before + n - log->size());
  return true;
}

int cap_log_main(int argc, char** argv) {
  if (argc < 6 || std::strcmp(argv[1], "--max") != 0 || std::strcmp(argv[4], "--") != 0) return usage();
  char* end = nullptr;
  long long max = std::strtoll(argv[2], &end, 10);
  if (end == argv[2] || *end != '\0' || max < 4) return usage();
  auto log = CappedLogWriter::open(argv[3], max);
  if (!log.ok()) {
    std::fprintf(stderr, "ferry: cap-log: %s\n", log.status().message().c_str());
    return 127;
  }
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return 127;
  struct sigaction sa {};
  sa.sa_handler = pass_on;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  // Held back until g_child is set, so a TERM right at the start still reaches the command.
  sigset_t passed, before;
  sigemptyset(&passed);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&passed, sig);
  sigprocmask(SIG_BLOCK, &passed, &before);
  pid_t child = ::fork();
  if (child < 0) return 127;
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &before, nullptr);
    exec_command(argv + 5, out[1]);
  }
  g_child = child;
  sigprocmask(SIG_SETMASK, &before, nullptr);
  ::close(out[1]);
  int rc = keep_until_exit(child, out[0], &*log);
  ::close(out[0]);
  return rc;
}

}  // namespace ferry
