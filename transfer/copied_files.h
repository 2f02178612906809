// What ferry wrote into a destination folder, and the prune that removes only that.
//
// A folder copy may land in a folder that holds the user's own files (notes,
// configs, other runs) or a host's `.ferry/` journals. ferry removes a file there
// only when it can prove it wrote it: each folder copy records the relative paths
// it brings in DIR/.ferry-files (added before any file is written, so a copy cut
// short still knows), and at its end removes the files of that record that the new
// copy lacks (a stale shard of an earlier checkpoint must not be loaded beside the
// new one). Everything else is left and named. The prune opens every folder on the
// way with O_NOFOLLOW beneath the destination, so it never follows a symlink, never
// leaves the destination, and never enters a `.ferry` folder.
//
// Plain functions over files. Any thread; one copy per folder at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "transfer/copy_bookkeeping.h"
#include "transfer/dest_folder.h"

namespace ferry {

/// How many removed or left files a report names (the counts are exact).
inline constexpr size_t kMaxPruneNamed = 100;

/// What a folder copy's end did to files the copy did not bring.
struct PruneReport {
  std::vector<std::string> removed;  // written by an earlier ferry copy, gone now
  int64_t removed_count = 0;
  std::vector<std::string> left;  // not ferry's (or not provably): kept, named
  int64_t left_count = 0;
  std::string not_pruned;  // why nothing was removed, when so ("" otherwise)
};

/// A report as a recv.finish_dir reply carries it, and back: a field of the wrong
/// type (a host's reply) reads as absent.
nlohmann::json prune_report_json(const PruneReport& r);
PruneReport prune_report_from_json(const nlohmann::json& j);

/// What a user reads of a report on `where` (host:path): a line for what was
/// removed, one for what was left, one for why nothing was removed; none when
/// there is nothing to say.
std::vector<std::string> prune_report_lines(const std::string& where, const PruneReport& r);

/// Refuses a folder copy root that is not a folder of its own: "/", the home
/// folder, `workdir` itself (when given), or a path with a ".." component (it may
/// be built from a host-written stage output).
Status check_folder_copy_root(const std::string& dir, const std::string& workdir = "");

/// Adds `incoming` to DIR's record of ferry-written files (temp + rename).
Status record_copied_files(const DestFolder& dir, const std::vector<std::string>& incoming);

/// Removes the recorded files that `keep` (the finished copy's files) lacks, names
/// the files under DIR that are neither kept nor recorded, then rewrites the
/// record as exactly `keep`. It acts in the folder `dir` holds open, whatever its
/// path names by then; one that is a symlink (dir.symlink) is not pruned.
Status prune_copied_files(const DestFolder& dir, const std::vector<std::string>& keep, PruneReport* report);

}  // namespace ferry
