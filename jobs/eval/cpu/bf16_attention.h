// Grouped-query attention in BF16 on CPUs with AVX512-BF16, for any number of query
// rows (a decode step, a verify, a draft block, a prefill chunk). libtorch 1.13 runs
// attention_with_mask's two BF16 batched matmuls on oneDNN, which compiles (JITs) a
// kernel for every new shape and keeps each in its primitive cache: in a decode loop the
// key count grows every step, so each step compiled two more kernels (~0.2 ms each here)
// and the cache grew by ~13 MB over one bench run (up to 1,024 entries, more with every
// distinct prompt length). This kernel has no per-shape state and no temporaries but
// per-thread buffers that only grow (a prefill's [heads, rows, keys] scores in float32
// were the largest of libtorch's temporaries), and does in one pass what took nine
// tensor ops. From 8 query rows a kv head over 2 positions or more (a verify, a prefill
// chunk) both of its products run on the packed projections' tile, the keys and the
// values packed for the call, every key computed (the mask then hides); a decode step
// takes one dot product per key, skipping keys the mask hides.
// It rounds where libtorch's path rounds (scores to BF16, scaled scores to BF16, float32
// softmax, probabilities to BF16, float32 sums of probability × value rounded once), so
// the two differ only in the order of float32 sums (and exp within an ulp).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace ferry::eval {

/// Whether bf16_attention() serves these: q [nh, T, hd], k/v [nkv, S, hd] BF16 on the
/// CPU, nh a multiple of nkv, hd a multiple of 32, the last
/// dims contiguous, mask undefined or float32 [T, S], and the BF16 kernels enabled.
bool bf16_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask);

/// attention_with_mask() for those: query head h reads kv head h / (nh / nkv); scores
/// scaled by 1/sqrt(hd), plus the additive mask (-inf hides a key). -> [T, nh * hd] BF16.
at::Tensor bf16_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask);

}  // namespace ferry::eval
