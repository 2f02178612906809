// The gated delta rule's recurrence on CPU float32 arrays, the Gated DeltaNet layer's
// inner loop (models/gated_delta_net.h has the math and the tensors around it):
// per step and value head h, S <- decay S + k (beta (v - decay S^T k))^T, o = S^T q.
// One head at a time: per step it reads S once for Sᵀk
// and once more to decay, write and read the output, where the ATen form makes ~5
// passes of small ops whose thread-pool wake-ups dominate on a busy box. Heads are
// independent, so large ones (Qwen3.6-27B: 48 heads of 128 x 128 per GDN layer) are
// split over the intra-op threads; each head's state stays in one core's cache.
#pragma once

#include <cstdint>

namespace ferry::eval {

/// T steps of Hv heads from `initial` [Hv, dk, dv] (read, never written) into `state`
/// (same shape); q [T, Hv, dk] and out [T, Hv, dv] may both be null (a replay wants no
/// outputs); k [T, Hv, dk], v [T, Hv, dv], decay and beta [T, Hv]. AVX-512 where
/// bf16_kernel_supported() and dv is a multiple of 16, else a scalar loop.
void gdn_recurrence_cpu(const float* q, const float* k, const float* v, const float* decay, const float* beta,
                        const float* initial, float* state, float* out, int64_t t_len, int64_t hv, int64_t dk,
                        int64_t dv);

}  // namespace ferry::eval
