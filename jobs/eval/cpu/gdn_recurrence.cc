#include "jobs/eval/cpu/gdn_recurrence.h"

#include <algorithm>
#include <vector>

#include "jobs/eval/cpu/avx512_lanes.h"
#include "jobs/eval/cpu/compute_threads.h"
#include "jobs/eval/cpu/cpu_features.h"

namespace ferry::eval {
namespace {

// State multiply-adds a thread takes at a time (whole heads). for_each_chunk splits a
// call only where each thread gets two such chunks: a small one runs on the calling
// thread (a parallel region waits for every thread; on a busy host, a time slice).
constexpr int64_t kParallelStateWork = int64_t{1} << 20;

// One head's steps, 16 value lanes at a time (dv a multiple of 16; blocks of up to
// kBlockVectors vectors keep their sums in registers across the dk keys). Each lane
// adds in the scalar loop's order, with fused multiply-adds. Several times the scalar
// loop's speed, which the build compiles for baseline x86-64: the recurrence was ~15 %
// of a 27B-shaped verify. Reached where bf16_kernel_supported() (compiled with the
// shared AVX-512 target, which names AVX512-BF16), else the scalar loop runs.
constexpr int64_t kBlockVectors = 8;

FERRY_AVX512_BF16 void delta_rule_head_avx512(const float* q, const float* k, const float* v, const float* decay,
                                               const float* beta, const float* from, float* s, float* out,
                                               int64_t t_len, int64_t hv, int64_t h, int64_t dk, int64_t dv) {
  for (int64_t t = 0; t < t_len; ++t) {
    const float* kt = k + (t * hv + h) * dk;
    const float* vt = v + (t * hv + h) * dv;
    const float* qt = q != nullptr ? q + (t * hv + h) * dk : nullptr;
    float* o = out != nullptr && qt != nullptr ? out + (t * hv + h) * dv : nullptr;
    const __m512 d = _mm512_set1_ps(decay[t * hv + h]), b = _mm512_set1_ps(beta[t * hv + h]);
    for (int64_t j0 = 0; j0 < dv; j0 += 16 * kBlockVectors) {
      const int64_t nv = std::min<int64_t>(kBlockVectors, (dv - j0) / 16);
      // Sᵀk of the undecayed state, then delta = beta (v - decay Sᵀk).
      __m512 delta[kBlockVectors];
      for (int64_t n = 0; n < nv; ++n) delta[n] = _mm512_setzero_ps();
      for (int64_t i = 0; i < dk; ++i) {
        const __m512 ki = _mm512_set1_ps(kt[i]);
        const float* row = from + i * dv + j0;
#pragma GCC unroll 8
        for (int64_t n = 0; n < nv; ++n) delta[n] = _mm512_fmadd_ps(_mm512_loadu_ps(row + 16 * n), ki, delta[n]);
      }
      for (int64_t n = 0; n < nv; ++n) {
        delta[n] = _mm512_mul_ps(b, _mm512_sub_ps(_mm512_loadu_ps(vt + j0 + 16 * n), _mm512_mul_ps(d, delta[n])));
      }
      // S = decay S + k ⊗ delta, and the output Sᵀq of the new state (a replay has no q:
      // its sums are zeros, never stored; the loop is bound by reading S, not by them).
      __m512 acc[kBlockVectors];
      for (int64_t n = 0; n < nv; ++n) acc[n] = _mm512_setzero_ps();
      for (int64_t i = 0; i < dk; ++i) {
        const __m512 ki = _mm512_set1_ps(kt[i]);
        const __m512 qi = _mm512_set1_ps(qt != nullptr ? qt[i] : 0.0f);
        const float* src = from + i * dv + j0;
        float* dst = s + i * dv + j0;
#pragma GCC unroll 8
        for (int64_t n = 0; n < nv; ++n) {
          const __m512 x = _mm512_fmadd_ps(d, _mm512_loadu_ps(src + 16 * n), _mm512_mul_ps(ki, delta[n]));
          _mm512_storeu_ps(dst + 16 * n, x);
          acc[n] = _mm512_fmadd_ps(x, qi, acc[n]);
        }
      }
      if (o != nullptr) {
        for (int64_t n = 0; n < nv; ++n) _mm512_storeu_ps(o + j0 + 16 * n, acc[n]);
      }
    }
    from = s;
  }
}

}  // namespace

void gdn_recurrence_cpu(const float* q, const float* k, const float* v, const float* decay, const float* beta,
                        const float* initial, float* state, float* out, int64_t t_len, int64_t hv, int64_t dk,
                        int64_t dv) {
  const int64_t per_head = std::max<int64_t>(1, t_len * dk * dv);
  const int64_t heads_per_chunk = std::max<int64_t>(1, kParallelStateWork / per_head);
  const bool vectors = dv % 16 == 0 && bf16_kernel_supported();
  // On the eval's own threads, like the projections around it (compute_threads.h).
  for_each_chunk((hv + heads_per_chunk - 1) / heads_per_chunk, [&](int64_t chunk) {
    const int64_t first = chunk * heads_per_chunk, end = std::min(hv, first + heads_per_chunk);
    const size_t scratch = vectors ? 0 : static_cast<size_t>(dv);  // the scalar loop's
    std::vector<float> kv(scratch), delta(scratch);
    for (int64_t h = first; h < end; ++h) {
      float* s = state + h * dk * dv;
      const float* from = initial + h * dk * dv;  // first step reads the snapshot
      if (t_len == 0) {
        std::copy(from, from + dk * dv, s);
        continue;
      }
      if (vectors) {
        delta_rule_head_avx512(q, k, v, decay, beta, from, s, out, t_len, hv, h, dk, dv);
        continue;
      }
      for (int64_t t = 0; t < t_len; ++t) {
        const float* kt = k + (t * hv + h) * dk;
        const float* vt = v + (t * hv + h) * dv;
        const float d = decay[t * hv + h], b = beta[t * hv + h];
        std::fill(kv.begin(), kv.end(), 0.0f);
        for (int64_t i = 0; i < dk; ++i) {
          const float ki = kt[i];
          const float* row = from + i * dv;
          for (int64_t j = 0; j < dv; ++j) kv[static_cast<size_t>(j)] += row[j] * ki;
        }
        for (int64_t j = 0; j < dv; ++j) {
          delta[static_cast<size_t>(j)] = b * (vt[j] - d * kv[static_cast<size_t>(j)]);
        }
        float* o = out != nullptr ? out + (t * hv + h) * dv : nullptr;
        if (o != nullptr) std::fill(o, o + dv, 0.0f);
        const float* qt = q != nullptr ? q + (t * hv + h) * dk : nullptr;
        for (int64_t i = 0; i < dk; ++i) {
          const float ki = kt[i];
          const float* src = from + i * dv;
          float* dst = s + i * dv;
          for (int64_t j = 0; j < dv; ++j) dst[j] = d * src[j] + ki * delta[static_cast<size_t>(j)];
          if (o != nullptr) {
            const float qi = qt[i];
            for (int64_t j = 0; j < dv; ++j) o[j] += dst[j] * qi;
          }
        }
        from = s;
      }
    }
  });
}

}  // namespace ferry::eval
