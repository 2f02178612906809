// CheckpointScan: which checkpoint folders a trainer has finished, from successive
// listings of the folder it writes them into (the agent's fs.list: every file with
// its size). The rule (workflows/README.md, "Watching checkpoints"):
//   - with a marker: a checkpoint is complete once the marker file is in it (the
//     trainer writes it last);
//   - without: once it holds config.json and its weights (model.safetensors.index.json,
//     or a *.safetensors file), and its files and their sizes are the same in two
//     listings in a row (a writer still at work changes them between polls).
// Plain logic, no I/O; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry {

struct CheckpointFolder {
  std::string name;             // "checkpoint-500"
  std::optional<int64_t> step;  // the number ending the name
  std::string signature;        // its files and sizes, in order
  bool has_weights = false;     // config.json and safetensors (or their index)
  bool has_marker = false;
};

/// The training step in a checkpoint's name: the digits it ends with.
std::optional<int64_t> step_of(const std::string& name);

/// Groups an fs.list answer's files (paths relative to the watched folder) into the
/// folders whose names match `pattern` (fnmatch), ordered by step, then name.
std::vector<CheckpointFolder> checkpoint_folders(const nlohmann::json& files, const std::string& pattern,
                                                 const std::string& marker);

class CheckpointScan {
 public:
  explicit CheckpointScan(std::string marker) : marker_(std::move(marker)) {}
  /// Takes a new listing; returns the folders complete by the rule above, in step order.
  std::vector<CheckpointFolder> update(const std::vector<CheckpointFolder>& listing);
  /// Folders seen in the last listing that are not complete (yet).
  const std::vector<std::string>& incomplete() const { return incomplete_; }

 private:
  std::string marker_;
  std::map<std::string, std::string> last_signature_;
  std::vector<std::string> incomplete_;
};

}  // namespace ferry
