#include "tests/support/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace ferry::testing {
namespace {

std::vector<std::string> merged_env(const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> all;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) all[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) all[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : all) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> c_array(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int decode_status(int st) {
  if (WIFEXITED(st)) return WEXITSTATUS(st);
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return -1;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv_in, const std::map<std::string, std::string>& env_in,
                          int timeout_s) {
  ProcessResult r;
  int out[2], err[2];
  // Close-on-exec: the child gets them as 1 and 2 only, so a daemon it starts does
  // not hold a stray write end that keeps this read waiting.
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) return r;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_addclose(&fa, out[0]);
  posix_spawn_file_actions_addclose(&fa, err[0]);
  std::vector<std::string> argv = argv_in;
  std::vector<std::string> env = merged_env(env_in);
  auto cargv = c_array(argv);
  auto cenv = c_array(env);
  pid_t pid;
  int rc = posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(out[0]);
    close(err[0]);
    r.err = std::string("spawn failed: ") + strerror(rc);
    return r;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) {
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, left) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  r.exit_code = decode_status(st);
  return r;
}

pid_t spawn_process(const std::vector<std::string>& argv_in, const std::map<std::string, std::string>& env_in,
                    const std::string& log_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> argv = argv_in;
  std::vector<std::string> env = merged_env(env_in);
  auto cargv = c_array(argv);
  auto cenv = c_array(env);
  pid_t pid = -1;
  if (posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), cenv.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

int wait_process(pid_t pid, int timeout_s) {
  int st = 0;
  bool done = wait_until([&] { return waitpid(pid, &st, WNOHANG) == pid; }, std::chrono::seconds(timeout_s));
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  return decode_status(st);
}

int wait_process_measuring_rss(pid_t pid, int timeout_s, int64_t* peak_kib) {
  int st = 0;
  bool done = wait_until(
      [&] {
        std::string status = read_text("/proc/" + std::to_string(pid) + "/status");
        size_t at = status.find("VmHWM:");
        if (at != std::string::npos) *peak_kib = std::max<int64_t>(*peak_kib, std::atoll(status.c_str() + at + 6));
        return waitpid(pid, &st, WNOHANG) == pid;
      },
      std::chrono::seconds(timeout_s));
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  return decode_status(st);
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool process_running(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= line.size()) return false;
  char state = line[paren + 2];
  return state != 'Z' && state != 'X';
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/ferry-test-XXXXXX";
  char* p = mkdtemp(tmpl);
  path_ = p ? p : "/tmp/ferry-test-failed";
}

TempDir::~TempDir() {
  if (std::getenv("FERRY_KEEP_TEST_DIRS")) return;
  std::string cmd = "rm -rf '" + path_ + "'";
  if (std::system(cmd.c_str()) != 0) {
  }
}

bool punches_holes(const std::string& dir) {
  const std::string probe = dir + "/.punch-probe";
  write_text(probe, std::string(1 << 16, 'x'));
  int fd = ::open(probe.c_str(), O_WRONLY | O_CLOEXEC);
  bool punched = fd >= 0 && ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1 << 16) == 0;
  if (fd >= 0) ::close(fd);
  ::unlink(probe.c_str());
  return punched;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string bin_dir() { return FERRY_BIN_DIR; }

}  // namespace ferry::testing
