#include "orchestrator/run_lock.h"

#include "base/file_util.h"

namespace ferry {
namespace {
// A coordinator that has just finished may still hold the lock for an instant
// (it is released at exit): a refusal counts once it has lasted this long.
constexpr int kProbeGraceMs = 300;
}  // namespace

std::string RunLock::path_for(const std::string& db_path, const std::string& run_id, const std::string& run_uid) {
  return dirname_of(db_path) + "/locks/" + (run_uid.empty() ? run_id : run_uid) + ".lock";
}

Result<FileLock> RunLock::take(const std::string& db_path, const std::string& run_id, const std::string& run_uid) {
  std::string path = path_for(db_path, run_id, run_uid);
  FERRY_RETURN_IF_ERROR(make_dirs(dirname_of(path)));
  auto lock = FileLock::try_take(path, kProbeGraceMs);
  if (!lock.ok() && lock.status().code() == StatusCode::kFailedPrecondition) {
    return failed_precondition("run " + run_id + " is being driven by another coordinator (it holds " + path + ")");
  }
  return lock;
}

std::optional<bool> RunLock::held(const std::string& db_path, const std::string& run_id,
                                  const std::string& run_uid) {
  return FileLock::held_elsewhere(path_for(db_path, run_id, run_uid));
}

}  // namespace ferry
