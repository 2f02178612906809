// DFlashDrafter: the DFlash block drafter (z-lab/dflash `DFlashDraftModel`) and
// DFlashProposer, which drives it with a target's embedding and lm_head.
//
// Context: the chosen target layers' raw outputs, concatenated, go through `fc` then
// `hidden_norm` once; each draft layer turns them into keys/values with its own
// k_proj/v_proj/k_norm and RoPE at their absolute positions and caches them per
// position. The block [bonus, MASK x (B-1)] is embedded with the target's table; every
// full-attention layer attends from the block's queries to [context keys; block keys]
// with no mask; a sliding layer (Qwen3.6 drafter) is causal inside the block and sees
// context keys only within `sliding_window` positions of each query.
// Slots 1..B-1 go through the drafter's `norm` and the target's lm_head (same-position
// prediction). Owns its weights and cache; one thread at a time; may throw c10::Error.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/cpu/tensor_ops.h"
#include "jobs/eval/io/dflash_config.h"
#include "jobs/eval/io/weight_loader.h"
#include "jobs/eval/models/decoder_layer.h"
#include "jobs/eval/models/drafter.h"
#include "jobs/eval/models/target_model.h"

namespace ferry::eval {

class DFlashDrafter {
 public:
  /// Loads config.json and weights (unprefixed names, or all under `model.`).
  /// target_hidden_size sizes `fc`'s input (len(target_layer_ids) * target_hidden_size).
  static Result<std::unique_ptr<DFlashDrafter>> load(const std::string& folder, int64_t target_hidden_size,
                                                     const ComputeOptions& options, LoadReport* report,
                                                     const std::string& what = "drafter");

  const DFlashConfig& config() const { return config_; }

  /// context: [C, len(target_layer_ids) * target_hidden] raw target features for positions
  /// cache_length() .. cache_length()+C-1 (cached per layer as K/V);
  /// block: [B, hidden] embeddings of the block at positions cache_length()+C .. +B-1.
  /// Returns [B, hidden], after the final norm.
  at::Tensor forward(const at::Tensor& context, const at::Tensor& block);

  int64_t cache_length() const { return caches_.empty() ? 0 : caches_[0].length(); }
  /// Allocates the context cache (plus room for one block) and RoPE tables for
  /// `positions` up front.
  void reserve(int64_t positions);
  void crop(int64_t length);
  void reset();
  /// About the multiply-adds of one row through fc and every layer's projections (ThreadsForWork).
  int64_t token_macs() const { return token_macs_; }

 private:
  using Layer = DecoderLayer;
  DFlashDrafter() = default;

  DFlashConfig config_;
  ComputeOptions options_;
  at::Tensor fc_, hidden_norm_, norm_;
  std::vector<Layer> layers_;
  std::vector<KvCache> caches_;
  std::unique_ptr<RopeCache> rope_;
  int64_t token_macs_ = 0;
};

/// The real Drafter: a DFlashDrafter fed through a target's embedding and lm_head.
class DFlashProposer : public Drafter {
 public:
  /// Checks that the pair fits (hidden sizes, layer ids, mask id); both must outlive it.
  static Result<std::unique_ptr<DFlashProposer>> create(TargetModel* target, DFlashDrafter* drafter);

  void reset() override;
  void reserve(int64_t positions) override;
  Result<std::vector<int64_t>> propose(const DraftRequest& request) override;

 private:
  DFlashProposer(TargetModel* target, DFlashDrafter* drafter) : target_(target), drafter_(drafter) {}
  TargetModel* target_;
  DFlashDrafter* drafter_;
};

}  // namespace ferry::eval
