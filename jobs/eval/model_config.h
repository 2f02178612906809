// Model configurations read from a Hugging Face `config.json`: the Qwen3 dense target
// and the DFlash drafter. Plain values, no libtorch; any thread.
//
// A VLM-wrapped target (config with `text_config`) yields its text backbone's config.
// What the engine cannot run faithfully (attention bias, sliding windows, linear
// attention, rope scaling) is refused here with the file and the field named, rather
// than computed wrongly.
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

struct DFlashConfig {
  Qwen3Config model;  // the drafter's own layer dimensions
  int64_t block_size = 0;
  int64_t mask_token_id = -1;
  std::vector<int64_t> target_layer_ids;
  bool target_layer_ids_derived = false;  // true when built by build_target_layer_ids
  int64_t num_target_layers = 0;          // 0 when absent
};

/// Reads `<folder>/config.json` as a Qwen3 dense target.
Result<Qwen3Config> load_qwen3_config(const std::string& folder);
/// Reads `<folder>/config.json` as a DFlash drafter.
Result<DFlashConfig> load_dflash_config(const std::string& folder);

/// The DFlash code's default choice of target layers (z-lab / SpecForge / sglang).
std::vector<int64_t> build_target_layer_ids(int64_t num_target_layers, int64_t num_draft_layers);

}  // namespace ferry::eval
