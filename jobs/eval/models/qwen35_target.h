// Qwen35Target: the Qwen3.5 / Qwen3.6 hybrid text backbone (`qwen3_5`) as a speculative
// target (see target_model.h): Gated DeltaNet layers (gated_delta_net.h) and gated full
// attention layers, dense SwiGLU MLPs, zero-centred (1+w) RMSNorms.
//
// Gated attention: q_proj rows are per head [q_h ; gate_h]; (1+w) q/k norms; RoPE on the
// first rotary_dim dims only (θ from rope_parameters; with text-only positions the
// interleaved M-RoPE is plain 1-D RoPE); softmax attention with GQA; the output times
// sigmoid(gate) before o_proj. Weights are used as the checkpoint maps them (no fused
// copies): a BF16 checkpoint computed in BF16 stays memory-mapped, except the matrices
// WeightLoader::take_linear repacks for the BF16 kernel in place of their pages.
//
// Rollback: attention caches crop; GDN layers replay their tape (snapshot + replay), so
// crop() accepts any length down to where the last forward began.
// VLM (`model.language_model.*`, vision tower and MTP head left unread) and CausalLM
// (`model.*`) layouts. Batch 1; one thread at a time; may throw c10::Error.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/cpu/tensor_ops.h"
#include "jobs/eval/io/qwen35_config.h"
#include "jobs/eval/io/weight_loader.h"
#include "jobs/eval/models/gated_delta_net.h"
#include "jobs/eval/models/target_model.h"

namespace ferry::eval {

/// The dimensions of `config`'s Gated DeltaNet layers.
GdnDims gdn_dims_of(const Qwen35Config& config);

class Qwen35Target : public TargetModel {
 public:
  static Result<std::unique_ptr<Qwen35Target>> load(const std::string& folder, const ComputeOptions& options,
                                                    LoadReport* report);

  const DecoderConfig& config() const override { return config_.text; }
  const Qwen35Config& hybrid_config() const { return config_; }
  const ComputeOptions& options() const override { return options_; }
  std::string describe() const override { return config_.describe(); }

  at::Tensor embed(const at::Tensor& ids) const override;
  at::Tensor lm_head(const at::Tensor& hidden) const override;
  Output forward(const at::Tensor& ids, const std::vector<int64_t>& capture, int64_t logits_rows = -1) override;

  int64_t cache_length() const override { return length_; }
  void crop(int64_t length) override;
  void reset() override;
  /// Image/video placeholder ids would need the vision tower: refused by name.
  Status check_prompt(const std::vector<int64_t>& prompt) const override;

 private:
  struct Layer {
    bool linear = false;
    at::Tensor input_norm, post_norm;  // float32 (1 + w)
    at::Tensor gate, up, down;
    GdnWeights gdn;
    at::Tensor q, k, v, o;      // gated attention; q: [heads * 2 * head_dim, hidden]
    at::Tensor q_norm, k_norm;  // float32 (1 + w)
  };
  Qwen35Target() = default;
  at::Tensor attention_layer(const Layer& layer, size_t index, const at::Tensor& x, int64_t past,
                             const RopeTables& rope);

  Qwen35Config config_;
  GdnDims gdn_dims_;
  ComputeOptions options_;
  at::Tensor embed_tokens_, lm_head_;
  at::Tensor norm_;  // float32 (1 + w)
  std::vector<Layer> layers_;
  std::vector<KvCache> caches_;   // used by attention layers
  std::vector<GdnState> states_;  // used by GDN layers
  int64_t length_ = 0;
  int64_t last_forward_start_ = 0;  // crop() may go back to here
  int64_t token_macs_ = 0;          // projections, head and recurrence, one row (ThreadsForWork)
  int64_t attention_layers_ = 0;
};

/// Qwen3.5's zero-centred RMSNorm: normalise in float32, scale by (1 + w) in float32
/// (`one_plus_w`, precomputed), then cast to x's dtype.
at::Tensor rms_norm_one_plus(const at::Tensor& x, const at::Tensor& one_plus_w, double eps);

}  // namespace ferry::eval
