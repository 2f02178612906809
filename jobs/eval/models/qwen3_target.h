// Qwen3Target: a Qwen3 dense causal LM (the speculative target, see target_model.h)
// with a croppable KV cache: crop() works for any length.
// Batch size 1. Owns its weights (possibly views of a mapped checkpoint) and its cache;
// one thread at a time. Methods may throw c10::Error; eval_runner catches.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/cpu/tensor_ops.h"
#include "jobs/eval/io/qwen3_config.h"
#include "jobs/eval/io/weight_loader.h"
#include "jobs/eval/models/decoder_layer.h"
#include "jobs/eval/models/target_model.h"

namespace ferry::eval {

class Qwen3Target : public TargetModel {
 public:
  /// Loads config.json and the weights under `folder`. Plain (`model.*`) and
  /// VLM-wrapped (`model.language_model.*`) names; vision and MTP tensors are skipped
  /// unread.
  static Result<std::unique_ptr<Qwen3Target>> load(const std::string& folder, const ComputeOptions& options,
                                                   LoadReport* report);

  const DecoderConfig& config() const override { return config_; }
  const ComputeOptions& options() const override { return options_; }
  std::string describe() const override;

  at::Tensor embed(const at::Tensor& ids) const override;
  at::Tensor lm_head(const at::Tensor& hidden) const override;
  /// Appends the new positions' K/V to the cache.
  Output forward(const at::Tensor& ids, const std::vector<int64_t>& capture, int64_t logits_rows = -1) override;

  int64_t cache_length() const override { return caches_.empty() ? 0 : caches_[0].length(); }
  /// Allocates the KV cache and RoPE tables for `positions` up front (a decode loop
  /// then allocates no cache memory per step).
  void reserve(int64_t positions) override;
  void crop(int64_t length) override;
  void reset() override;

 private:
  // Every matrix is the checkpoint's own tensor (a view of the mapping when the dtype
  // matches): fusing q/k/v or gate/up would copy the weights.
  using Layer = DecoderLayer;
  Qwen3Target() = default;

  DecoderConfig config_;
  ComputeOptions options_;
  at::Tensor embed_tokens_;  // [vocab, hidden]
  at::Tensor lm_head_;       // [vocab, hidden], or packed (project_columns); embed_tokens_ when tied
  at::Tensor norm_;
  std::vector<Layer> layers_;
  std::vector<KvCache> caches_;
  std::unique_ptr<RopeCache> rope_;
  int64_t token_macs_ = 0;  // projections and head, one row (ThreadsForWork)
};

}  // namespace ferry::eval
