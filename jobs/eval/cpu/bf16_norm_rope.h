// RMSNorm and rotary embedding on BF16 rows, each in one pass over its input, for the
// small tensors of a decode step or a verify: libtorch runs each as 5-8 element-wise
// ops (widen, square, mean, rsqrt, scale, narrow, round, weight), every one a dispatch,
// an allocation and a pass, about 30 per decoder layer, ~1 ms of a 1-token forward of
// eval_bench's target. Results equal libtorch's path but for the order of the float32
// sum of squares: the same widenings, the same BF16 roundings in the same places.
// AVX512-BF16 CPUs with the kernel on (bf16_kernel_enabled()); anything else stays
// on libtorch (tensor_ops.cc asks the *_applies functions).
#pragma once

#include <ATen/ATen.h>

namespace ferry::eval {

/// x [..., H] BF16 contiguous on the CPU, w [H] BF16, H a multiple of 16.
bool bf16_rms_norm_applies(const at::Tensor& x, const at::Tensor& w);
/// w * bf16(x * rsqrt(mean(x^2) + eps)), each row's statistics in float32.
at::Tensor bf16_rms_norm(const at::Tensor& x, const at::Tensor& w, double eps);

/// x [..., T, D] BF16 contiguous, cos and sin [T, D] BF16 contiguous, D a multiple of 32.
bool bf16_rope_applies(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
/// x * cos + rotate_half(x) * sin, each product and the sum rounded to BF16 as libtorch does.
at::Tensor bf16_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

/// x [T, H, D] (a projection's output seen per head) BF16 contiguous, w [D] BF16, cos and
/// sin [T, D] BF16 contiguous, D a multiple of 32 up to 1,024.
bool bf16_norm_rope_heads_applies(const at::Tensor& x, const at::Tensor& w, const at::Tensor& cos,
                                  const at::Tensor& sin);
/// bf16_rope(bf16_rms_norm(x, w).transpose(0, 1), cos, sin) -> [H, T, D] contiguous, in
/// one pass: a block of rows leaves the heads' transposed view non-contiguous, and
/// libtorch's own rope then ran on it (six ops, ~90 us a layer of a 16-token verify).
at::Tensor bf16_norm_rope_heads(const at::Tensor& x, const at::Tensor& w, double eps, const at::Tensor& cos,
                                const at::Tensor& sin);

}  // namespace ferry::eval
