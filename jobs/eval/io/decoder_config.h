// DecoderConfig: the dimensions every decoder-only family shares (vocabulary, hidden
// and MLP sizes, layer count, attention heads, norm eps, RoPE θ, stop ids, tied head),
// as a target reports them to the speculative loop and as a drafter describes its own
// layers. Each family's config reader (qwen3_config.h, qwen35_config.h,
// dflash_config.h) fills one from config.json; read_decoder_config reads the fields
// they share. Plain value, no libtorch; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace ferry::eval {

struct DecoderConfig {
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

/// Reads the shared fields from `j` (a config.json, or its text_config) into `c`,
/// refusing what no family here computes (attention bias, rope scaling, an activation
/// other than SiLU) with `path` and the field named.
Status read_decoder_config(const nlohmann::json& j, const std::string& path, DecoderConfig* c);

/// A target's text backbone: from `text_config` when `top` has one (a VLM wrapper; then
/// vlm_wrapped, and tie_word_embeddings / eos may come from the top level), else from
/// `top`. Requires a vocab_size. Returns the object read, for the family's own fields.
Result<const nlohmann::json*> read_backbone_config(const nlohmann::json& top, const std::string& path,
                                                   DecoderConfig* c);

}  // namespace ferry::eval
