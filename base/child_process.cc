#include "base/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

namespace ferry {
namespace {

constexpr size_t kStderrKeepBytes = 4096;
constexpr int kPipeBytes = 1 << 20;  // fewer wakeups for multi-MiB frames; best effort

void close_fd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

// The child's four pipes: stdin, stdout, stderr (when captured) and the one that
// carries exec's errno back; -1 where closed or not made.
struct SpawnPipes {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, exec_err[2] = {-1, -1};

  Status open(bool capture_stderr) {
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
        (capture_stderr && ::pipe2(err, O_CLOEXEC) != 0) || ::pipe2(exec_err, O_CLOEXEC) != 0) {
      int e = errno;
      close_all();
      return errno_status("pipe", e);
    }
    ::fcntl(in[1], F_SETPIPE_SZ, kPipeBytes);
    ::fcntl(out[0], F_SETPIPE_SZ, kPipeBytes);
    return Status();
  }

  void close_all() {
    for (int* p : {in, out, err, exec_err}) {
      close_fd(&p[0]);
      close_fd(&p[1]);
    }
  }
};

// Ours with `env`'s NAME=VALUE entries in place of the same names. Built before
// fork: the child may only make async-signal-safe calls.
std::vector<std::string> environment_with(const std::vector<std::string>& env) {
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    bool replaced = false;
    for (const auto& add : env) {
      size_t name_end = add.find('=') + 1;  // 0 (no name) when there is no '='
      replaced = replaced || (name_end > 0 && entry.compare(0, name_end, add, 0, name_end) == 0);
    }
    if (!replaced) env_text.push_back(std::move(entry));
  }
  env_text.insert(env_text.end(), env.begin(), env.end());
  return env_text;
}

// The strings as exec wants them: pointers, then a null.
std::vector<char*> exec_array(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the forked child: its pipes as stdin, stdout (and stderr), then exec. Only
// async-signal-safe calls; exec's errno goes back through the exec-error pipe.
[[noreturn]] void exec_in_child(const SpawnPipes& pipes, const ChildProcess::Options& options, pid_t parent,
                                char* const* args, char* const* envp) {
  ::dup2(pipes.in[0], 0);
  ::dup2(pipes.out[1], 1);
  if (options.capture_stderr) ::dup2(pipes.err[1], 2);
  if (options.stderr_to_stdout) ::dup2(pipes.out[1], 2);
  if (options.own_process_group) ::setpgid(0, 0);
  // A parent gone before the prctl would leave it unheard: check after.
  if (options.die_with_parent && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)) _exit(127);
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;  // a mask the spawning thread had must not keep SIGTERM from it
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execvpe(args[0], args, envp);
  int e = errno;
  ssize_t ignored = ::write(pipes.exec_err[1], &e, sizeof e);
  (void)ignored;
  _exit(127);
}

// The exec-error pipe closes on a successful exec (CLOEXEC) or carries errno:
// nothing when the program runs, else why not.
std::optional<int> exec_errno(int exec_err_read) {
  int e = 0;
  ssize_t n;
  do {
    n = ::read(exec_err_read, &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  if (n == sizeof e) return e;
  return std::nullopt;
}

}  // namespace

Result<std::unique_ptr<ChildProcess>> ChildProcess::spawn(const std::vector<std::string>& argv, Options options) {
  if (argv.empty()) return invalid_argument("no program to run");
  SpawnPipes pipes;
  if (Status opened = pipes.open(options.capture_stderr); !opened.ok()) return opened;
  std::vector<char*> args = exec_array(argv);
  const std::vector<std::string> env_text = environment_with(options.env);
  std::vector<char*> envp = exec_array(env_text);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    pipes.close_all();
    return errno_status("fork", e);
  }
  if (pid == 0) exec_in_child(pipes, options, parent, args.data(), envp.data());
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->in_ = pipes.in[1];
  child->out_ = pipes.out[0];
  child->err_ = pipes.err[0];
  pipes.in[1] = pipes.out[0] = pipes.err[0] = -1;
  close_fd(&pipes.exec_err[1]);
  const std::optional<int> exec_error = exec_errno(pipes.exec_err[0]);
  pipes.close_all();
  if (exec_error) {
    child->finish(0);
    return errno_status("cannot run " + argv[0], *exec_error);
  }
  ::fcntl(child->in_, F_SETFL, ::fcntl(child->in_, F_GETFL) | O_NONBLOCK);
  if (child->err_ >= 0) ::fcntl(child->err_, F_SETFL, ::fcntl(child->err_, F_GETFL) | O_NONBLOCK);
  return child;
}

ChildProcess::~ChildProcess() { finish(1000); }

Status ChildProcess::write_all(const char* data, size_t n, int timeout_ms) {
  size_t off = 0;
  while (off < n) {
    if (in_ < 0) return unavailable("the child's input is closed");
    pollfd p{in_, POLLOUT, 0};
    int r = ::poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return errno_status("poll", errno);
    if (r == 0) return unavailable("no room to write for " + std::to_string(timeout_ms / 1000) + " s");
    ssize_t w = ::write(in_, data + off, n - off);
    if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (w <= 0) return unavailable(std::string("writing to the child: ") + std::strerror(errno));
    off += static_cast<size_t>(w);
  }
  return Status();
}

Result<size_t> ChildProcess::read_some(char* buf, size_t n, int timeout_ms) {
  if (out_ < 0) return unavailable("the child's output is closed");
  pollfd p{out_, POLLIN, 0};
  int r = ::poll(&p, 1, timeout_ms);
  if (r < 0) {
    if (errno == EINTR) return size_t{0};
    return errno_status("poll", errno);
  }
  if (r == 0) return size_t{0};
  ssize_t got = ::read(out_, buf, n);
  if (got < 0) {
    if (errno == EINTR || errno == EAGAIN) return size_t{0};
    return unavailable(std::string("reading from the child: ") + std::strerror(errno));
  }
  if (got == 0) return unavailable("the child closed its output");
  return static_cast<size_t>(got);
}

void ChildProcess::drain_stderr() {
  if (err_ < 0) return;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(err_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    stderr_.append(buf, static_cast<size_t>(n));
    if (stderr_.size() > 2 * kStderrKeepBytes) stderr_.erase(0, stderr_.size() - kStderrKeepBytes);
  }
  if (stderr_.size() > kStderrKeepBytes) stderr_.erase(0, stderr_.size() - kStderrKeepBytes);
}

std::string ChildProcess::stderr_tail() {
  drain_stderr();
  return stderr_;
}

int ChildProcess::finish(int grace_ms) {
  if (pid_ <= 0) return wait_status_;
  close_fd(&in_);
  close_fd(&out_);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (;;) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_ || (r < 0 && errno != EINTR)) {
      wait_status_ = r == pid_ ? st : -1;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
      }
      wait_status_ = st;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pid_ = -1;
  drain_stderr();  // what it said on the way out: the child is gone, so this cannot block
  close_fd(&err_);
  return wait_status_;
}

}  // namespace ferry
