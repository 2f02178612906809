// The Gated DeltaNet's steps between its input projection and its recurrence (issue
// 45): the causal depthwise conv over the q|k|v channels, SiLU, q and k L2-normalised
// (q scaled by d_k^-1/2) and repeated for the value heads. Op by op that is ~30 libtorch
// calls a layer on a few thousand values, most of a hybrid decode step's fixed cost;
// here, for small float32 inputs (tensor_ops.h's kSmallF32Values), the conv, the
// squares, the normalisation and the repeat are plain loops making libtorch's float32
// operations in its order (the conv's sums fused multiply-adds, as libtorch's vectorised
// addcmul_ computes them; the rest rounded op by op); SiLU and the sums of squares stay
// libtorch's (one call each), so the values are bit-identical
// (SmallFloat32Test.GdnConvQk*).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace ferry::eval {

/// What the conv step hands the recurrence, as models/gated_delta_net.cc used it.
struct GdnConvQk {
  at::Tensor window;  // [K-1+T, C] float32: the conv state, then the T new rows
  at::Tensor q;       // [T, Hv, d_k], normalised, scaled, repeated
  at::Tensor k;       // [T, Hv, d_k], normalised, repeated
  at::Tensor v;       // [T, Hv, d_v]
};

struct GdnConvQkShape {
  int64_t key_heads = 0;    // Hk
  int64_t key_dim = 0;      // d_k
  int64_t value_heads = 0;  // Hv, a multiple of Hk
  int64_t value_dim = 0;    // d_v
  double l2_eps = 1e-6;
};

/// Whether gdn_conv_qk_small_f32 takes qkv [T, C] (float32 or BF16, contiguous, on the
/// CPU), conv_state [K-1, C] and conv_weight [K, C] (float32, contiguous): small enough
/// and the small float32 path on (set_small_f32_enabled).
bool gdn_conv_qk_small_f32_applies(const at::Tensor& qkv, const at::Tensor& conv_state, const at::Tensor& conv_weight);

/// window = cat(conv_state, qkv); conv_t = silu(Σ_j window[t + j] * w[j]); q, k =
/// l2norm of conv's q and k heads (q times d_k^-1/2), repeated Hv/Hk times head by head;
/// v = conv's value channels.
GdnConvQk gdn_conv_qk_small_f32(const GdnConvQkShape& shape, const at::Tensor& qkv, const at::Tensor& conv_state,
                                const at::Tensor& conv_weight);

}  // namespace ferry::eval
