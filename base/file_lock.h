// FileLock: an exclusive flock(2) on a file, held while the object lives.
//
// The kernel drops the lock when the last descriptor of it closes, so a process
// that dies (SIGKILL, a crash) leaves no stale lock, and nothing depends on a PID.
// The descriptor is close-on-exec; a forked child shares the lock until it closes
// its copy. A value owned by one thread.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"

namespace ferry {

class FileLock {
 public:
  FileLock() = default;
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  /// Creates `path` (0600) if needed and waits for the lock.
  static Result<FileLock> take(const std::string& path);
  /// The same of `name` in the folder open at `dir`; errors name `shown`.
  static Result<FileLock> take_at(int dir, const std::string& name, const std::string& shown);
  /// The same without waiting longer than `patience_ms`: kFailedPrecondition while
  /// another holder keeps it.
  static Result<FileLock> try_take(const std::string& path, int patience_ms = 0);
  /// Whether another process holds the lock at `path` now, probed with a shared
  /// lock let go at once (a taker in that instant needs a few ms of patience);
  /// nullopt when there is no such file or it cannot be probed.
  static std::optional<bool> held_elsewhere(const std::string& path);

  int fd() const { return fd_; }

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace ferry
