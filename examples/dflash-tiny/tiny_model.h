// Trainable tiny Qwen3 target and DFlash drafter for the dflash-tiny example: plain
// structs of leaf tensors (requires_grad) with the Hugging Face names, batched
// training forwards, AdamW, and checkpoint save/load in the layout jobs/eval reads
// (config.json + model.safetensors, F32). The math follows
// shared/reference/dflash-eval.md §1 (drafter), §3 (objective) and §4 (Qwen3).
// libtorch (ATen) appears only in this header's users: tiny_model.cc and the two
// trainer mains. One thread drives a model; libtorch's intra-op pool does the rest.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ferry::dflash_tiny {

struct Dims {
  int64_t vocab = 260;
  int64_t hidden = 64;
  int64_t intermediate = 192;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t head_dim = 16;
  double eps = 1e-6;
  double theta = 10000.0;
  int64_t max_positions = 512;
};

struct Layer {
  at::Tensor input_norm, q, k, v, o, q_norm, k_norm, post_norm, gate, up, down;
};

using Named = std::vector<std::pair<std::string, at::Tensor>>;

struct Target {
  Dims dims;
  int64_t eos_id = 256;
  at::Tensor embed, norm, lm_head;  // untied head
  std::vector<Layer> layers;
  Named named() const;  // HF names: model.embed_tokens.weight, model.layers.N..., lm_head.weight
};

struct Drafter {
  Dims dims;  // the drafter's own layers; vocab = the target's
  int64_t block_size = 8;
  int64_t mask_id = 259;
  int64_t num_target_layers = 0;
  std::vector<int64_t> target_layer_ids;
  at::Tensor fc, hidden_norm, norm;
  std::vector<Layer> layers;
  Named named() const;  // unprefixed: fc.weight, hidden_norm.weight, norm.weight, layers.i...
};

Target init_target(const Dims& dims, uint64_t seed);
Drafter init_drafter(const Dims& dims, int64_t fc_inputs, uint64_t seed);
/// Reads a target written by save_target (F32, the names above).
Result<Target> load_target(const std::string& folder);

std::vector<at::Tensor> parameters(const Named& named);

/// tokens: [batch, T] int64 -> logits [batch, T, vocab]. For each id in `capture`,
/// appends the raw output of that 0-based decoder layer ([batch, T, hidden]; HF
/// hidden_states[id + 1], the final norm not applied) to *captured.
at::Tensor target_forward(const Target& target, const at::Tensor& tokens, const std::vector<int64_t>& capture,
                          std::vector<at::Tensor>* captured);

struct DrafterBatchStats {
  double loss = 0;
  double slot1_accuracy = 0;  // argmax == label at block slot 1
  double all_accuracy = 0;    // over every weighted slot
};

/// The DFlash objective (§3). tokens: [batch, S] int64; features: [batch, S, F] (target
/// layer outputs, concatenated in target_layer_ids order); anchors: [batch, A] int64 with
/// 1 <= anchor < S - 1. Each anchor p makes a block [tokens[p], MASK x (B-1)] at positions
/// p..p+B-1 that sees context keys < p and its own block; slot k predicts tokens[p+k]
/// (slots past S are dropped), weighted exp(-(k-1)/gamma). Returns the scalar loss.
at::Tensor drafter_loss(const Drafter& drafter, const Target& target, const at::Tensor& tokens,
                        const at::Tensor& features, const at::Tensor& anchors, double gamma, DrafterBatchStats* stats);

/// AdamW with global-norm clipping; state per parameter.
class AdamW {
 public:
  AdamW(std::vector<at::Tensor> params, double weight_decay) : params_(std::move(params)), wd_(weight_decay) {}
  /// Clips gradients to max_norm, applies one step at lr, zeroes the gradients.
  /// Returns the gradient norm before clipping.
  double step(double lr, double max_norm);

 private:
  std::vector<at::Tensor> params_, m_, v_;
  double wd_;
  int64_t t_ = 0;
};

/// Writes config.json + model.safetensors into `folder` so that a reader never sees a
/// half-written file: each is written under `folder/.tmp/` and renamed into place
/// (weights first, then config).
Status save_target(const std::string& folder, const Target& target);
Status save_drafter(const std::string& folder, const Drafter& drafter);

/// Token stream + document starts (positions after each EOS, and 0).
struct TokenStream {
  std::vector<int64_t> tokens;
  std::vector<int64_t> doc_starts;
};
Result<TokenStream> load_stream(const std::string& path);
/// [batch, len] int64 windows: half start at a document start, half anywhere.
at::Tensor sample_windows(const TokenStream& stream, int64_t batch, int64_t len, uint64_t* rng_state);

/// The DFlash code's default target layers (z-lab / SpecForge / sglang build_target_layer_ids).
std::vector<int64_t> default_target_layer_ids(int64_t num_target_layers, int64_t num_draft_layers);
/// "1,3" -> {1, 3}; empty on a parse error.
std::vector<int64_t> parse_ids(const std::string& text);

/// Warmup then cosine decay to 10% of peak.
double lr_at(int64_t step, int64_t total, double peak, double warmup_fraction);

}  // namespace ferry::dflash_tiny
