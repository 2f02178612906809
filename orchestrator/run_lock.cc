#include "orchestrator/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "base/file_util.h"

namespace ferry {
namespace {
// A coordinator that has just finished may still hold the lock for an instant
// (it is released at exit): a refusal counts once it has lasted this long.
constexpr int kProbeGraceMs = 300;
}  // namespace

std::string RunLock::path_for(const std::string& db_path, const std::string& run_id) {
  return dirname_of(db_path) + "/locks/" + run_id + ".lock";
}

Result<FileLock> RunLock::take(const std::string& db_path, const std::string& run_id) {
  std::string path = path_for(db_path, run_id);
  FERRY_RETURN_IF_ERROR(make_dirs(dirname_of(path)));
  auto lock = FileLock::try_take(path, kProbeGraceMs);
  if (!lock.ok() && lock.status().code() == StatusCode::kFailedPrecondition) {
    return failed_precondition("run " + run_id + " is being driven by another coordinator (it holds " + path + ")");
  }
  return lock;
}

std::optional<bool> RunLock::held(const std::string& db_path, const std::string& run_id) {
  int fd = ::open(path_for(db_path, run_id).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  // A shared lock conflicts only with a coordinator's exclusive one, and is let go
  // at once: a coordinator starting in this instant waits out kProbeGraceMs.
  int r;
  do r = ::flock(fd, LOCK_SH | LOCK_NB);
  while (r != 0 && errno == EINTR);
  int err = errno;
  ::close(fd);
  if (r == 0) return false;
  if (err == EWOULDBLOCK) return true;
  return std::nullopt;
}

}  // namespace ferry
