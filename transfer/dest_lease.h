// One destination file of a copy and its lease: DEST.ferry-owner names the copy that
// writes DEST from recv.begin to its commit, taken under a flock on DEST.ferry-lock,
// so two copies never write one part file (see receive_begin in chunk_files.h). Every
// call is an *at() call on the folder that holds DEST, held open (dest_folder.h,
// review F26). Plain functions; several processes may contend for one lease.
#pragma once

#include <string>

#include "base/file_lock.h"
#include "base/status.h"
#include "transfer/dest_folder.h"

namespace ferry {

/// One destination file: the folder that holds it, held open, and its name there.
/// ferry's files beside it (DEST.ferry-part, ...) are names in the same folder.
struct DestFile {
  const DestFolder& dir;
  const std::string& name;

  int fd() const { return dir.fd.get(); }
  std::string file(const char* ext) const { return name + ext; }
  std::string shown(const char* ext = "") const { return dir.shown(name + ext); }
};

/// The destination's lock, held while a lease is taken, renewed or ended.
Result<FileLock> lock_dest(const DestFile& d);
/// Ends a lease: the owner file, then the lock's file (call while the lock is held).
void release_dest(const DestFile& d);
/// Takes or renews `owner`'s lease ("<job> <attempt> <token>"; "" for none): kUnavailable
/// while another copy's fresh lease holds DEST at `beginning`, kFailedPrecondition after.
Status claim_dest(const DestFile& d, const std::string& owner, bool beginning);
/// kFailedPrecondition when another copy has taken DEST over from `owner` (call while
/// the lock is held).
Status check_still_held(const DestFile& d, const std::string& owner);

}  // namespace ferry
