// Deterministic random tiny models in the Hugging Face layout (config.json +
// safetensors, single file or sharded, F32/F16/BF16, plain or VLM-wrapped names), made
// here so tests and examples download nothing. Values are rounded to what BF16
// represents exactly, so a BF16 checkpoint and its F32 twin hold the same numbers.
//
// Two target architectures: qwen3 (dense) and qwen3_5 (hybrid: Gated DeltaNet
// `linear_attention` layers + gated `full_attention` layers, (1+w) norms; VLM layout =
// Qwen3_5ForConditionalGeneration with a vision tower and MTP head, plain layout =
// Qwen3_5ForCausalLM). Drafters may mix sliding_attention layers (Qwen3.6 style).
//
// Two target kinds:
//  * random: ordinary random Qwen3 weights; greedy output is arbitrary but fixed.
//  * oracle: greedy next token is a known function of the current token, oracle_next(),
//    by construction: embeddings are one-hot in the first `vocab` dims, every layer
//    writes only into the dims above `vocab`, and lm_head reads only the first `vocab`
//    dims, so logit j is positive exactly when j == oracle_next(current token) and 0
//    otherwise. Attention and MLPs still compute real, non-zero values in the upper dims.
// Drafter kinds: random; agree (predicts oracle_next(mask) = the oracle's fixed token
// at every slot, built the same way); disagree (final norm negated on the vocab dims,
// so it never predicts the fixed token).
// Plain functions, no libtorch; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ferry::eval {

/// The decoder layers' widths, which a target and its drafter both have.
struct TinyLayerDims {
  int64_t hidden = 64;  // a drafter's must equal its target's
  int64_t intermediate = 128;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t head_dim = 16;
  double rope_theta = 10000.0;
};

struct TinyTargetSpec : TinyLayerDims {
  std::string arch = "qwen3";   // qwen3 | qwen3_5
  std::string kind = "random";  // random | oracle
  int64_t vocab = 320;
  bool tie_embeddings = false;
  int64_t eos_token_id = -1;  // -1: none
  uint64_t seed = 1;
  // oracle: f(t) = fixed_token when t % period == 0, t == fixed_token or t == mask_token;
  // otherwise (7 t + 3) mod vocab.
  int64_t oracle_fixed_token = 7;
  int64_t oracle_period = 1;
  int64_t oracle_mask_token = -1;  // the drafter's mask id (maps to fixed_token)
  // qwen3_5 only.
  std::vector<std::string> layer_types;  // empty: every 4th layer full attention, the rest linear
  double partial_rotary_factor = 0.25;
  int64_t linear_key_heads = 2;
  int64_t linear_value_heads = 4;
  int64_t linear_key_dim = 8;
  int64_t linear_value_dim = 8;
  int64_t conv_kernel = 4;
  /// Random qwen3_5 only: each big matrix gets its own seed and is generated chunk by
  /// chunk while written (for 27B-shaped benchmark slices; never held whole in memory).
  bool streamed = false;
};

struct TinyDrafterSpec : TinyLayerDims {
  TinyDrafterSpec() { layers = 2; }
  std::string kind = "random";  // random | agree | disagree
  int64_t target_vocab = 320;   // agree/disagree: the oracle target's vocab
  int64_t block_size = 16;
  int64_t mask_token_id = 0;
  int64_t num_target_layers = 4;
  std::vector<int64_t> target_layer_ids;  // empty: left out of the config (derived)
  uint64_t seed = 2;
  std::vector<std::string> layer_types;  // empty: all full_attention (left out of the config)
  int64_t sliding_window = 0;            // with sliding_attention layers
};

struct TinyWriteSpec {
  std::string dtype = "F32";  // F32 | F16 | BF16
  int shards = 0;             // 0: single file
  bool vlm_wrapped = false;   // targets: model.language_model.* + model.visual.* + mtp.*
};

/// Sets Qwen3.6-27B's widths on a qwen3_5 spec (hidden 5,120, MLP 17,408, 24 q / 4 kv
/// heads of 256, θ 1e7, GDN 16 key / 48 value heads of 128, conv 4), for benchmark
/// slices; vocabulary, layer count and kind stay the caller's.
void set_qwen36_27b_widths(TinyTargetSpec* spec);

/// A drafter that fits `target`: its widths (hidden, MLP, heads, head_dim, θ), its
/// vocabulary and its layer count; the drafter's own layers, kind and block stay the defaults.
TinyDrafterSpec drafter_spec_for(const TinyTargetSpec& target);

/// The small oracle target of the tests and of ferry-tiny-models' suite: vocabulary 64
/// (63: the drafters' mask token) in hidden 96, 6 query heads (2 kv heads of 16), greedy
/// successor period `period`; the depth, the seed and the arch stay the caller's.
TinyTargetSpec small_oracle_target_spec(int64_t period);

Status write_tiny_target(const std::string& folder, const TinyTargetSpec& spec, const TinyWriteSpec& write);
Status write_tiny_drafter(const std::string& folder, const TinyDrafterSpec& spec, const TinyWriteSpec& write);

/// The oracle target's greedy next token after `token`.
int64_t oracle_next(const TinyTargetSpec& spec, int64_t token);

/// Deterministic prompts: `count` lines of {"input_ids": [...]}, lengths in [min_len, max_len].
Status write_tiny_prompts(const std::string& path, int count, int64_t vocab, int min_len, int max_len,
                          uint64_t seed);

}  // namespace ferry::eval
