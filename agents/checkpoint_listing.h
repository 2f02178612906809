// The listing a checkpoint watch polls (agent op fs.scan), kept apart from a copy's
// own listing (list_source, which refuses what it cannot copy): the folders directly
// in `path` whose names match `pattern` (fnmatch, FNM_PERIOD), each with its regular
// files two levels down (NAME/FILE and NAME/SUB/FILE; a folder deeper than that is
// one entry, "NAME/SUB/DEEP/", by its mtime). Symlinks, sockets and FIFOs are
// skipped: a trainer's output folder holds them (`latest -> checkpoint-500`, wandb's
// `latest-run`). A folder or file that vanishes while it is listed (checkpoint
// rotation) is left out. Shallow on purpose: a DeepSpeed tree of 250k shards is not
// lstat-ed twice a second, and a page stops after about `max_entries` entries (the
// next page starts after `next`), so no reply nears the frame cap.
// Reply: protocol::FsScanReply (protocol/ops/fs.h). Plain function over files; any thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "protocol/ops/fs.h"

namespace ferry {

inline constexpr int64_t kMaxScanPageEntries = 100000;

/// Lists `path`: a relative one beneath `workdir`, opened without following a
/// symlink on the way (a link is refused, naming it: base/beneath.h); an absolute
/// one as named. Below it, the walk opens each folder from the one before, O_NOFOLLOW.
Result<protocol::FsScanReply> list_checkpoints(const std::string& workdir, const std::string& path,
                                               const std::string& pattern, const std::string& after,
                                               int64_t max_entries);

}  // namespace ferry
