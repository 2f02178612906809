#include "transfer/dest_lease.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "base/clock.h"
#include "base/file_util.h"
#include "transfer/chunk_files.h"

namespace ferry {
namespace {

constexpr char kOwner[] = ".ferry-owner";
constexpr char kLock[] = ".ferry-lock";

struct LeaseHolder {
  std::string job, token;
  int attempt = 0;
};

LeaseHolder parse_owner(const std::string& text) {
  LeaseHolder h;
  std::istringstream in(text);
  in >> h.job >> h.attempt >> h.token;
  return h;
}

}  // namespace

// The lock's file is removed when a lease ends, so a holder checks that the name
// still leads to the file it locked (else it locked a removed one, and takes the new one).
Result<FileLock> lock_dest(const DestFile& d) {
  for (;;) {
    auto lock = FileLock::take_at(d.fd(), d.file(kLock), d.shown(kLock));
    if (!lock.ok()) return lock.status();
    struct stat held, named;
    if (::fstat(lock->fd(), &held) != 0) return errno_status("stat " + d.shown(kLock), errno);
    if (::fstatat(d.fd(), d.file(kLock).c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 && named.st_ino == held.st_ino &&
        named.st_dev == held.st_dev) {
      return lock;
    }
  }
}

// Ends a lease: the owner file, then the lock's file (while it is held).
void release_dest(const DestFile& d) {
  ::unlinkat(d.fd(), d.file(kOwner).c_str(), 0);
  ::unlinkat(d.fd(), d.file(kLock).c_str(), 0);
}

// Takes or renews `owner`'s lease on dest (see receive_begin in the header).
Status claim_dest(const DestFile& d, const std::string& owner, bool beginning) {
  if (owner.empty()) return Status();
  auto lock = lock_dest(d);
  if (!lock.ok()) return lock.status();
  auto current = read_file_at(d.fd(), d.file(kOwner), d.shown(kOwner));
  if (current.ok() && *current != owner) {
    struct stat st;
    bool fresh =
        ::fstatat(d.fd(), d.file(kOwner).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        now_ms() - (static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000) < kDestLeaseMs;
    LeaseHolder them = parse_owner(*current), me = parse_owner(owner);
    bool supersedes = them.job == me.job && me.attempt >= them.attempt;
    if (fresh && !supersedes) {
      if (beginning) {
        return unavailable(d.shown() + " is " + kDestBusy + " (" + them.job + ", attempt " +
                           std::to_string(them.attempt) + "); this copy waits for it to finish");
      }
      return failed_precondition(d.shown() + " was taken over by another copy (" + them.job + ")");
    }
  }
  // Not flushed: a crash ends the copy that held the lease anyway.
  if (!current.ok() || *current != owner) {
    return write_file_atomic_at(d.fd(), d.file(kOwner), d.shown(kOwner), owner, 0600, /*durable=*/false);
  }
  (void)::utimensat(d.fd(), d.file(kOwner).c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // renew
  return Status();
}

Status check_still_held(const DestFile& d, const std::string& owner) {
  auto current = read_file_at(d.fd(), d.file(kOwner), d.shown(kOwner));
  if (current.ok() && *current != owner) {
    return failed_precondition(d.shown() + " was taken over by another copy (" + parse_owner(*current).job + ")");
  }
  return Status();
}

}  // namespace ferry
