// The DFlash drafter's config.json: its own layers' dimensions (a DecoderConfig; all
// full attention, or Qwen3.6's sliding + full mix), the block size, the mask token and
// the target layers whose outputs it reads. No libtorch; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/io/decoder_config.h"

namespace ferry::eval {

struct DFlashConfig {
  DecoderConfig model;  // the drafter's own layer dimensions
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

/// Reads `<folder>/config.json` as a DFlash drafter.
Result<DFlashConfig> load_dflash_config(const std::string& folder);

/// The DFlash code's default choice of target layers (z-lab / SpecForge / sglang).
std::vector<int64_t> build_target_layer_ids(int64_t num_target_layers, int64_t num_draft_layers);

}  // namespace ferry::eval
