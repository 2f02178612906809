// RunLock: exactly one coordinator drives a run. An exclusive flock(2) on
// <db folder>/locks/<run uid>.lock (base/file_lock.h), held from before the
// coordinator reads the run until it exits; the kernel drops it when the process
// ends however it ends (SIGKILL, a crash), so there is no stale lock to clean
// and no PID to trust (a PID may be reused, or another machine's on NFS).
// Named by the run's uid, not its id: two databases in one folder both count
// "hello-3". Runs recorded before uids existed keep <run id>.lock.
#pragma once

#include <optional>
#include <string>

#include "base/file_lock.h"

namespace ferry {

class RunLock {
 public:
  /// Takes the lock of the run `run_id` (uid `run_uid`, '' for an old run) beside
  /// the database at `db_path`: kFailedPrecondition, naming the run, when another
  /// coordinator holds it.
  static Result<FileLock> take(const std::string& db_path, const std::string& run_id, const std::string& run_uid);
  static std::string path_for(const std::string& db_path, const std::string& run_id, const std::string& run_uid);
  /// Whether a coordinator holds the lock now, probed without taking it for more
  /// than an instant; nullopt when the run has no lock file (a run recorded before
  /// the lock existed, or one whose state lives on another machine's disk).
  static std::optional<bool> held(const std::string& db_path, const std::string& run_id, const std::string& run_uid);
};

}  // namespace ferry
