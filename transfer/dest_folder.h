// DestFolder: the folder a copy writes in, held open (review F26). A relative
// destination is opened beneath the host's workdir without following a symlink
// (base/beneath.h), and every write after that (part file, journal, lease, rename,
// completion marker, prune) is an *at() call on this descriptor: a folder swapped
// for a symlink after the open is never written through. An absolute destination
// (the user's word, the coordinator's keep_local) is opened as named and written
// by the same code. A value owned by one thread.
#pragma once

#include <string>

#include "base/status.h"
#include "base/unique_fd.h"

namespace ferry {

struct DestFolder {
  UniqueFd fd;           // O_RDONLY | O_DIRECTORY: *at() calls, fsync, a listing
  std::string path;      // as the user named it, joined to the workdir: errors name it
  bool symlink = false;  // an absolute path ending in a symlink: written through, never pruned

  /// `name` in this folder, for messages.
  std::string shown(const std::string& name) const;
};

/// Opens the folder `path`: a relative one beneath `workdir`, an absolute one (or
/// any, when `workdir` is "") as named. `create` makes the missing folders.
Result<DestFolder> open_dest_folder(const std::string& workdir, const std::string& path, bool create);

/// Opens the folder that holds the file `path` (as open_dest_folder) and sets
/// *name to the file's name in it.
Result<DestFolder> open_dest_parent(const std::string& workdir, const std::string& path, bool create,
                                    std::string* name);

}  // namespace ferry
