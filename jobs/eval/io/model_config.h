// Model configurations read from a Hugging Face `config.json`: the Qwen3 dense target,
// the Qwen3.5/3.6 hybrid target (`qwen3_5`: Gated DeltaNet + gated attention) and the
// DFlash drafter (all full attention, or Qwen3.6's sliding + full mix). Plain values,
// no libtorch; any thread.
//
// A VLM-wrapped target (config with `text_config`) yields its text backbone's config.
// What the engine cannot run faithfully (attention bias, sliding windows on a target,
// rope scaling, mixture-of-experts) is refused here with the file and the field named,
// rather than computed wrongly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ferry::eval {

struct Qwen3Config {
  std::string path;  // the config.json read
  std::string model_type;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // hidden_size / num_attention_heads when absent
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool tie_word_embeddings = false;
  std::vector<int64_t> eos_token_ids;  // stop ids; may be empty
  bool vlm_wrapped = false;            // config had text_config / vision_config
};

/// A Qwen3.5 / Qwen3.6 text backbone. `text` holds the dimensions shared with Qwen3
/// (vocab, hidden, MLP, layer count, the gated-attention layers' heads, eps, RoPE θ, eos).
struct Qwen35Config {
  Qwen3Config text;
  std::vector<bool> linear_layer;  // per layer: Gated DeltaNet (true) or gated full attention
  double partial_rotary_factor = 0.25;
  int64_t rotary_dim = 0;  // head_dim * partial_rotary_factor: the rotated leading dims
  int64_t linear_num_key_heads = 0;
  int64_t linear_num_value_heads = 0;
  int64_t linear_key_head_dim = 0;
  int64_t linear_value_head_dim = 0;
  int64_t linear_conv_kernel_dim = 4;
  std::vector<int64_t> vision_token_ids;  // image/video/vision-start ids: prompts holding them are refused
  int64_t num_linear_layers() const;
  /// "qwen3_5: 3 linear + 1 full attention"
  std::string describe() const;
};

struct DFlashConfig {
  Qwen3Config model;  // the drafter's own layer dimensions
  int64_t block_size = 0;
  int64_t mask_token_id = -1;
  std::vector<int64_t> target_layer_ids;
  bool target_layer_ids_derived = false;  // true when built by build_target_layer_ids
  int64_t num_target_layers = 0;          // 0 when absent
  /// Per layer: Qwen3.6-style sliding attention (causal inside the block, context keys
  /// within `sliding_window` positions) instead of full non-causal attention.
  std::vector<bool> sliding_layer;
  int64_t sliding_window = 0;  // > 0 when any layer slides
};

/// What kind of target `<folder>/config.json` describes: "qwen3" or "qwen3_5" (by
/// model_type, top level or text_config). qwen3_5_moe is refused by name.
Result<std::string> detect_target_architecture(const std::string& folder);

/// Reads `<folder>/config.json` as a Qwen3 dense target.
Result<Qwen3Config> load_qwen3_config(const std::string& folder);
/// Reads `<folder>/config.json` as a Qwen3.5/3.6 hybrid target (VLM or CausalLM layout).
Result<Qwen35Config> load_qwen35_config(const std::string& folder);
/// Reads `<folder>/config.json` as a DFlash drafter.
Result<DFlashConfig> load_dflash_config(const std::string& folder);

/// The DFlash code's default choice of target layers (z-lab / SpecForge / sglang).
std::vector<int64_t> build_target_layer_ids(int64_t num_target_layers, int64_t num_draft_layers);

}  // namespace ferry::eval
