// RunLock: exactly one coordinator drives a run. An exclusive flock(2) on
// <ferry home>/locks/<run id>.lock, held from before the coordinator reads the
// run until it exits; the kernel drops it when the process ends however it ends
// (SIGKILL, a crash), so there is no stale lock to clean and no PID to trust.
//
// Thread contract: a RunLock is a value owned by one thread; it releases on
// destruction. held_elsewhere() may be called from any process.
#pragma once

#include <string>

#include "base/status.h"

namespace ferry {

class RunLock {
 public:
  RunLock() = default;
  RunLock(RunLock&& other) noexcept;
  RunLock& operator=(RunLock&& other) noexcept;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();

  /// Takes the lock of run `run_id` beside the database at `db_path`, without
  /// waiting: kFailedPrecondition when another process holds it.
  static Result<RunLock> take(const std::string& db_path, const std::string& run_id);
  /// Whether some process holds the run's lock now (a live coordinator).
  static bool held_elsewhere(const std::string& db_path, const std::string& run_id);

  static std::string path_for(const std::string& db_path, const std::string& run_id);

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace ferry
