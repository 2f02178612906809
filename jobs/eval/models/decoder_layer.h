// The weights of one Qwen3-style decoder layer (attention with per-head q/k norms,
// SwiGLU MLP), as the Qwen3 target and the DFlash drafter both hold and load them.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "jobs/eval/io/weight_loader.h"

namespace ferry::eval {

struct DecoderLayer {
  at::Tensor input_norm, q, k, v, o, q_norm, k_norm, post_norm, gate, up, down;
};

/// The widths a layer's tensors are checked against.
struct DecoderLayerShape {
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0;
};

/// Takes layer `prefix` ("model.layers.3.") from the loader, projections packed where
/// the kernel applies (WeightLoader::take_linear); a missing or misshapen tensor is
/// recorded by the loader and named by its finish().
DecoderLayer load_decoder_layer(WeightLoader& loader, const std::string& prefix, const DecoderLayerShape& s);

/// Multiply-adds of the layer's projections for one row (what a packed matrix holds too:
/// its numel is rows x columns), for the threads a forward gets (ThreadsForWork).
int64_t projection_macs(const DecoderLayer& layer);

}  // namespace ferry::eval
