// x @ w^T for BF16 activations of a few rows (a decode step: 1; a verify: a block) on
// CPUs with AVX512-BF16. Such a product is bound by streaming w from memory, and
// libtorch 1.13's oneDNN BF16 path streams it at about half the speed a core can read
// (~9 GB/s per core here); this kernel reads each weight row once, straight from the
// (possibly memory-mapped) checkpoint, with vdpbf16ps, float32 accumulation and one
// rounding to BF16 per output, split by output rows over libtorch's OpenMP threads.
// Everything else (other dtypes, CPUs without AVX512-BF16, many rows, non-contiguous
// rows) stays with libtorch: callers ask bf16_linear_applies() first.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace ferry::eval {

/// Rows of x up to which the kernel is used; past it oneDNN's gemm reuses weights better.
constexpr int64_t kBf16LinearMaxRows = 16;

/// Whether this CPU and OS run AVX512-BF16 (cpuid and the OS's saved vector state).
bool bf16_kernel_supported();

/// Process-wide switch (on by default) so a benchmark can time libtorch's path beside
/// the kernel in one run; off, bf16_linear_applies() is false.
void set_bf16_kernel_enabled(bool enabled);

/// True when bf16_linear(x, w) runs the kernel: both BF16 on the CPU, x [M, K] with
/// 1 <= M <= kBf16LinearMaxRows, w [N, K], rows of both contiguous, and
/// bf16_kernel_supported(), and the kernel is enabled.
bool bf16_linear_applies(const at::Tensor& x, const at::Tensor& w);

/// x: [M, K], w: [N, K] -> [M, N] BF16, each output the float32 sum of its K products
/// rounded once. Only where bf16_linear_applies(x, w).
at::Tensor bf16_linear(const at::Tensor& x, const at::Tensor& w);

}  // namespace ferry::eval
