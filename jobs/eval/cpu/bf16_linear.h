// x @ w^T for BF16 activations of a few rows (a decode step: 1; a verify: a block) on
// CPUs with AVX512-BF16. Such a product is bound by streaming w from memory, and
// libtorch 1.13's oneDNN BF16 path streams it at about half the speed a core can read
// (~9 GB/s per core here); this kernel reads each weight row once, straight from the
// (possibly memory-mapped) checkpoint, with vdpbf16ps, float32 accumulation and one
// rounding to BF16 per output, split by output rows over the eval's own threads (compute_threads.h).
// Everything else (other dtypes, CPUs without AVX512-BF16, many rows, non-contiguous
// rows) stays with libtorch: callers ask bf16_linear_applies() first.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "jobs/eval/cpu/cpu_features.h"

namespace ferry::eval {

/// Rows of x up to which the kernel is used; past it oneDNN's gemm reuses weights better.
constexpr int64_t kBf16LinearMaxRows = 16;
/// Above one row the product is bound by arithmetic, not memory, and the kernel's one
/// horizontal sum per output costs more the shorter the rows: measured per core (thread
/// CPU time, 16 rows of x) it trails oneDNN at K = 1024 (79 vs 95 GFLOP/s) and K = 2048
/// (99 vs 108) and leads at K = 4096 (115 vs 109; 4 rows: 50 vs 42). So a block of rows
/// uses it only from this K up; a single row always (1.3-1.6x oneDNN's speed).
constexpr int64_t kBf16LinearMinBlockDepth = 4096;

/// Process-wide switch (on by default) so a benchmark can time libtorch's path beside
/// the kernel in one run; off, bf16_linear_applies() is false.
void set_bf16_kernel_enabled(bool enabled);

/// Whether the kernels run here: supported by the CPU and not switched off.
bool bf16_kernel_enabled();

/// True when project() should run bf16_linear(x, w): both BF16 on the CPU, x [M, K]
/// with M = 1, or 1 < M <= kBf16LinearMaxRows and K >= kBf16LinearMinBlockDepth,
/// w [N, K], rows of both contiguous, bf16_kernel_supported(), and the kernel enabled.
bool bf16_linear_applies(const at::Tensor& x, const at::Tensor& w);

/// x: [M, K], w: [N, K] -> [M, N] BF16, each output the float32 sum of its K products
/// rounded once. Needs bf16_kernel_supported(), both BF16, contiguous, on the CPU; any
/// M (bf16_linear_applies() says where it pays).
at::Tensor bf16_linear(const at::Tensor& x, const at::Tensor& w);

}  // namespace ferry::eval
