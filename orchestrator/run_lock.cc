#include "orchestrator/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

#include "agents/file_util.h"

namespace ferry {
namespace {
constexpr int kProbeGraceMs = 300;
}  // namespace

std::string RunLock::path_for(const std::string& db_path, const std::string& run_id) {
  return dirname_of(db_path) + "/locks/" + run_id + ".lock";
}

RunLock::RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

RunLock& RunLock::operator=(RunLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

Result<RunLock> RunLock::take(const std::string& db_path, const std::string& run_id) {
  std::string path = path_for(db_path, run_id);
  FERRY_RETURN_IF_ERROR(make_dirs(dirname_of(path)));
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return errno_status("open run lock " + path, errno);
  // held_elsewhere() probes take a shared lock for an instant: a refusal is final
  // only once it has lasted longer than any probe.
  auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(kProbeGraceMs);
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err == EINTR) continue;
    if (err == EWOULDBLOCK && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return failed_precondition("run " + run_id + " is being driven by another coordinator (it holds " + path +
                                 ")");
    }
    return errno_status("lock " + path, err);
  }
  return RunLock(fd);
}

bool RunLock::held_elsewhere(const std::string& db_path, const std::string& run_id) {
  std::string path = path_for(db_path, run_id);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;  // never taken: nobody drives it
  bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // drops the shared lock if it was granted
  return held;
}

}  // namespace ferry
