// CheckpointScan: which checkpoint folders a trainer has finished, from successive
// listings of the folder it writes them into (the agent's fs.scan: each folder whose
// name matches the pattern, with its files, sizes and mtimes; agents/checkpoint_listing.h).
// The rule (workflows/README.md, "Watching checkpoints"):
//   - with a marker: a checkpoint is complete once the marker file is in it (the
//     trainer writes it last);
//   - without: once it holds config.json and its weights (model.safetensors.index.json,
//     or a *.safetensors file), and its files, sizes and mtimes have stayed the same
//     over kStablePolls listings spanning at least kStableMs (a writer still at work,
//     or one that stalled for a moment, changes them between polls).
// Plain logic, no I/O; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/ops/fs.h"

namespace ferry {

inline constexpr int kStablePolls = 3;
inline constexpr int64_t kStableMs = 2000;

struct CheckpointFolder {
  std::string name;             // "checkpoint-500"
  std::optional<int64_t> step;  // the number ending the name
  std::string signature;        // its files, sizes and mtimes, in order
  int64_t newest_mtime_ns = 0;  // of the folder and its files
  bool has_weights = false;     // config.json and safetensors (or their index)
  bool has_marker = false;
  bool listed_whole = true;  // false: too many files for one listing; never complete
};

/// The training step in a checkpoint's name: the digits it ends with.
std::optional<int64_t> step_of(const std::string& name);

/// The folders of an fs.scan answer (its `folders`, all pages) whose names match
/// `pattern` (fnmatch) and are one path component, ordered by step, then name.
/// (The reply's shape was checked as it was read: FsScanReply::from_json.)
std::vector<CheckpointFolder> checkpoint_folders(const std::vector<protocol::ScannedFolder>& folders,
                                                 const std::string& pattern, const std::string& marker);

class CheckpointScan {
 public:
  explicit CheckpointScan(std::string marker) : marker_(std::move(marker)) {}
  /// Takes a new listing made at `now_ms`; returns the folders complete by the rule
  /// above, in step order.
  std::vector<CheckpointFolder> update(const std::vector<CheckpointFolder>& listing, int64_t now_ms);
  /// Folders seen in the last listing that are not complete (yet).
  const std::vector<std::string>& incomplete() const { return incomplete_; }

 private:
  struct Seen {
    std::string signature;
    int64_t since_ms = 0;  // the first listing with this signature
    int polls = 0;         // listings in a row with it
  };
  std::string marker_;
  std::map<std::string, Seen> seen_;
  std::vector<std::string> incomplete_;
};

}  // namespace ferry
