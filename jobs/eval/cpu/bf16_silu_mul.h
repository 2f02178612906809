// The SwiGLU gate of an MLP, silu(gate) * up, on BF16 rows in one pass, in place on the
// gate's rows. libtorch runs it as two element-wise ops (silu_, mul_), each a pass and,
// from 32,768 values (a verify's 16 rows of 4,096), an OpenMP region whose sleeping
// thread takes ~20 us to wake; here the rows are split over the eval's own threads
// (for_each_chunk). Same roundings as libtorch 1.13's two ops: silu's e^-x, 1 + e^-x
// and the quotient each rounded to BF16, then the product rounded; libtorch's e^x
// (Sleef) and this one (exp_lanes) may differ in the last float32 bit, so rarely a
// value lands one BF16 step apart.
// AVX512-BF16 CPUs with the kernel on; anything else stays on libtorch (tensor_ops.cc).
#pragma once

#include <ATen/ATen.h>

namespace ferry::eval {

/// gate and up BF16 contiguous on the CPU, the same shape, a multiple of 16 values.
bool bf16_silu_mul_applies(const at::Tensor& gate, const at::Tensor& up);
/// gate = silu(gate) * up with libtorch's roundings, as at::silu_(gate).mul_(up) leaves it.
void bf16_silu_mul_(const at::Tensor& gate, const at::Tensor& up);

}  // namespace ferry::eval
