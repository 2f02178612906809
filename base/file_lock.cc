#include "base/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace ferry {
namespace {

Result<int> open_lock_file(int dir, const std::string& name, const std::string& path) {
  int fd = ::openat(dir, name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return errno_status("open lock " + path, errno);
  return fd;
}

}  // namespace

FileLock::FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

Result<FileLock> FileLock::take(const std::string& path) { return take_at(AT_FDCWD, path, path); }

Result<FileLock> FileLock::take_at(int dir, const std::string& name, const std::string& path) {
  auto fd = open_lock_file(dir, name, path);
  if (!fd.ok()) return fd.status();
  while (::flock(*fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    ::close(*fd);
    return errno_status("lock " + path, err);
  }
  return FileLock(*fd);
}

Result<FileLock> FileLock::try_take(const std::string& path, int patience_ms) {
  auto fd = open_lock_file(AT_FDCWD, path, path);
  if (!fd.ok()) return fd.status();
  auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(patience_ms);
  while (::flock(*fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err == EINTR) continue;
    if (err == EWOULDBLOCK && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    ::close(*fd);
    if (err == EWOULDBLOCK) return failed_precondition(path + " is locked by another process");
    return errno_status("lock " + path, err);
  }
  return FileLock(*fd);
}

std::optional<bool> FileLock::held_elsewhere(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  int r;
  do r = ::flock(fd, LOCK_SH | LOCK_NB);
  while (r != 0 && errno == EINTR);
  int err = errno;
  ::close(fd);  // drops the shared lock if it was granted
  if (r == 0) return false;
  if (err == EWOULDBLOCK) return true;
  return std::nullopt;
}

}  // namespace ferry
