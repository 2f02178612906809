// Qwen3Target: a Qwen3 dense causal LM (the speculative target) with a croppable KV
// cache. forward() runs the next tokens after what the cache holds and returns their
// logits and the raw outputs of the requested decoder layers (Hugging Face's
// hidden_states[layer + 1]; for the last layer that slot is the final-normed output).
// Batch size 1. Owns its weights (possibly views of a mapped checkpoint) and its cache;
// one thread at a time. Methods may throw c10::Error; eval_runner catches.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/model_config.h"
#include "jobs/eval/tensor_ops.h"
#include "jobs/eval/weight_loader.h"

namespace ferry::eval {

class Qwen3Target {
 public:
  struct Output {
    at::Tensor logits;    // [rows, vocab] in the compute dtype: the last `rows` positions (all by default)
    at::Tensor features;  // [T, len(capture) * hidden]: requested layer outputs, concatenated in order
  };

  /// Loads config.json and the weights under `folder`. Plain (`model.*`) and
  /// VLM-wrapped (`model.language_model.*`) names; vision and MTP tensors are skipped
  /// unread.
  static Result<std::unique_ptr<Qwen3Target>> load(const std::string& folder, const ComputeOptions& options,
                                                   LoadReport* report);

  const Qwen3Config& config() const { return config_; }
  const ComputeOptions& options() const { return options_; }

  /// ids: [T] int64 -> [T, hidden]
  at::Tensor embed(const at::Tensor& ids) const;
  /// hidden: [T, hidden] (already final-normed) -> [T, vocab], compute dtype (argmax
  /// needs no float32 copy)
  at::Tensor lm_head(const at::Tensor& hidden) const;

  /// Runs ids: [T] at positions cache_length() .. cache_length()+T-1 and appends their
  /// K/V to the cache. logits_rows < 0: logits for every position; else for the last
  /// logits_rows. capture: 0-based layer ids whose outputs make `features`.
  Output forward(const at::Tensor& ids, const std::vector<int64_t>& capture, int64_t logits_rows = -1);

  int64_t cache_length() const { return caches_.empty() ? 0 : caches_[0].length(); }
  /// Allocates the KV cache and RoPE tables for `positions` up front (a decode loop
  /// then allocates no cache memory per step).
  void reserve(int64_t positions);
  /// Keeps positions [0, length).
  void crop(int64_t length);
  void reset();

 private:
  // Every matrix is the checkpoint's own tensor (a view of the mapping when the dtype
  // matches): fusing q/k/v or gate/up would copy the weights.
  struct Layer {
    at::Tensor input_norm, q, k, v, o, q_norm, k_norm, post_norm, gate, up, down;
  };
  Qwen3Target() = default;

  Qwen3Config config_;
  ComputeOptions options_;
  at::Tensor embed_tokens_;  // [vocab, hidden]
  at::Tensor lm_head_;       // [vocab, hidden]; same storage as embed_tokens_ when tied
  at::Tensor norm_;
  std::vector<Layer> layers_;
  std::vector<KvCache> caches_;
  std::unique_ptr<RopeCache> rope_;
};

}  // namespace ferry::eval
