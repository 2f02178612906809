// The Qwen3.5 / Qwen3.6 hybrid target's config.json (`qwen3_5`: Gated DeltaNet +
// gated attention), from `text_config` (VLM, `Qwen3_5ForConditionalGeneration`) or the
// top level (`Qwen3_5ForCausalLM`). Mixture-of-experts and RoPE scaling are refused
// with the file and the field named. No libtorch; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/io/decoder_config.h"

namespace ferry::eval {

/// A Qwen3.5 / Qwen3.6 text backbone. `text` holds the dimensions shared with Qwen3
/// (vocab, hidden, MLP, layer count, the gated-attention layers' heads, eps, RoPE θ, eos).
struct Qwen35Config {
  DecoderConfig text;
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

/// Reads `<folder>/config.json` as a Qwen3.5/3.6 hybrid target (VLM or CausalLM layout).
/// Which family a config is, is models/families' question, not this reader's.
Result<Qwen35Config> load_qwen35_config(const std::string& folder);

}  // namespace ferry::eval
