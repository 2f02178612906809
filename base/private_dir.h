// private_dir: is a folder safe to run or serve from? (review F15, N7)
//
// ferry executes the agent binary from <workdir>/.ferry/bin and serves lanes from
// a socket under <workdir>/.ferry/run. Whoever can write one of those folders (or
// the workdir above them: a shared /scratch, a /tmp path, a setgid team folder)
// can replace the binary or rebind the socket and run code as the user. These
// checks refuse such folders with a message that names the folder and the fix.
// Plain functions; any thread.
#pragma once

#include <string>

#include "base/status.h"

namespace ferry {

/// kPermissionDenied unless `path` (symlinks followed) is a folder owned by this
/// user and not writable by group or others. A folder that does not exist passes:
/// the caller creates it itself.
Status check_not_shared_dir(const std::string& path);

/// The folders an agent's binary is trusted through: `workdir`, `workdir`/.ferry
/// and `workdir`/.ferry/bin, each by check_not_shared_dir, parents first.
Status check_agent_dirs(const std::string& workdir);

/// Creates `path` 0700 if missing (its parents as make_dirs does), then refuses,
/// with kPermissionDenied naming it, unless `path` itself (not a symlink) is a
/// folder owned by this user with mode exactly 0700.
Status make_owner_only_dir(const std::string& path);

}  // namespace ferry
