// Real containment for a host's relative data paths (review F26): a relative path
// a workflow or a copy names (`models/x`) is opened beneath the workdir without
// following any symlink on the way, so `models -> /shared/models` in the workdir
// is refused with its name instead of read, written or pruned through. Absolute
// paths are taken as the user wrote them.
//
// openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) where the kernel has it (5.6+);
// elsewhere (ENOSYS, or a seccomp filter's EPERM) a walk that opens each folder
// with O_NOFOLLOW relative to the last. Either way what is opened is what was
// checked: a folder swapped for a symlink meanwhile is refused, not followed.
// Plain functions; any thread.
#pragma once

#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace ferry {

/// Opens `rel` (relative, no ".." component) beneath the folder `root` with
/// open(2) `flags` (O_CLOEXEC is added) and `mode` for O_CREAT. A symlink at any
/// component, the last included, is refused (kInvalidArgument, naming `rel` and
/// the link). `openat2` false forces the fallback walk (tests).
Result<UniqueFd> open_beneath(const std::string& root, const std::string& rel, int flags, int mode = 0,
                              bool openat2 = true);

/// Opens the folder `rel` (relative, no ".." component; "" is `root`) beneath
/// `root` for reading (O_RDONLY | O_DIRECTORY): a folder to act in with *at()
/// calls, so what is written is what was checked. Each component is opened with
/// O_NOFOLLOW relative to the one before; with `create` a missing one is made
/// first (mkdirat). A symlink on the way is refused as open_beneath refuses it.
/// With `parent`, the folder that holds `rel` (errors still name `rel`).
Result<UniqueFd> open_dir_beneath(const std::string& root, const std::string& rel, bool create, bool parent = false);

/// As open_beneath, beneath the folder open at `root_fd` (named `root` in errors): for
/// a caller that holds the folder open, so that what it opens later stays beneath
/// that folder whatever its name points at by then.
Result<UniqueFd> open_beneath_at(int root_fd, const std::string& root, const std::string& rel, int flags, int mode = 0,
                                 bool openat2 = true);

/// A host data path opened: relative ones beneath `workdir` (open_beneath),
/// absolute ones as named.
Result<UniqueFd> open_data_path(const std::string& workdir, const std::string& path, int flags, int mode = 0);

/// Refuses (as open_beneath does) a relative `rel` whose existing components
/// beneath `root` include a symlink; the components not there yet are fine. For
/// the readers that still act by path name (a listing's name, fs.stat, fs.scan).
Status check_no_symlink_beneath(const std::string& root, const std::string& rel);

}  // namespace ferry
