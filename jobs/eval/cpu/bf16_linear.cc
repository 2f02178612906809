#include "jobs/eval/cpu/bf16_linear.h"

#include "jobs/eval/cpu/avx512_lanes.h"
#include "jobs/eval/cpu/cpu_features.h"
#include "jobs/eval/cpu/compute_threads.h"

#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <vector>

namespace ferry::eval {
namespace {

using bf16 = c10::BFloat16;

// Output rows a thread takes at a time (a multiple of kTileWeightRows).
constexpr int64_t kChunkRows = 48;
// A register tile: kMaxTileRows x rows by kTileWeightRows weight rows of float32 sums
// (24 of the 32 vector registers), so each vector loaded feeds several multiply-adds.
constexpr int kMaxTileRows = 8;
constexpr int kTileWeightRows = 3;

std::atomic<bool> g_enabled{true};

FERRY_AVX512_BF16 inline __m512bh load(const bf16* p) { return (__m512bh)_mm512_loadu_si512(p); }
FERRY_AVX512_BF16 inline __m512bh load(const bf16* p, __mmask32 m) {
  return (__m512bh)_mm512_maskz_loadu_epi16(m, p);
}

// One x row against rows [n0, n1) of w: four independent sums per row keep the
// multiply-add latency hidden, and the next rows are prefetched, since the hardware
// prefetcher alone leaves a core well short of its read bandwidth.
FERRY_AVX512_BF16 void gemv_rows(const bf16* x, const bf16* w, int64_t k_len, int64_t n0, int64_t n1, bf16* out) {
  constexpr int64_t kPrefetchBytes = 4096;
  const int64_t k_main = k_len / 128 * 128, k_vec = k_len / 32 * 32;
  const __mmask32 tail = static_cast<__mmask32>((uint64_t{1} << (k_len - k_vec)) - 1);
  for (int64_t n = n0; n < n1; ++n) {
    const bf16* row = w + n * k_len;
    const char* ahead = reinterpret_cast<const char*>(row) + kPrefetchBytes;
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k < k_main; k += 128) {
      _mm_prefetch(ahead + 2 * k, _MM_HINT_T0);
      _mm_prefetch(ahead + 2 * k + 64, _MM_HINT_T0);
      _mm_prefetch(ahead + 2 * k + 128, _MM_HINT_T0);
      _mm_prefetch(ahead + 2 * k + 192, _MM_HINT_T0);
      s0 = _mm512_dpbf16_ps(s0, load(row + k), load(x + k));
      s1 = _mm512_dpbf16_ps(s1, load(row + k + 32), load(x + k + 32));
      s2 = _mm512_dpbf16_ps(s2, load(row + k + 64), load(x + k + 64));
      s3 = _mm512_dpbf16_ps(s3, load(row + k + 96), load(x + k + 96));
    }
    for (; k < k_vec; k += 32) s0 = _mm512_dpbf16_ps(s0, load(row + k), load(x + k));
    if (k < k_len) s1 = _mm512_dpbf16_ps(s1, load(row + k, tail), load(x + k, tail));
    out[n] = bf16(sum_lanes(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3))));
  }
}

// The sums of 16 accumulators at once, rounded to BF16: a transposing add tree (about 3
// instructions per accumulator where 16 separate horizontal sums and scalar roundings
// take about 20, a third of a verify's time at K = 1024). out[i] = sum of acc[i]'s lanes.
FERRY_AVX512_BF16 inline void sum16(const __m512* acc, bf16* out) {
  constexpr __mmask16 all = 0xFFFF;
  __m512 t[8], u[4], v[2];
  for (int i = 0; i < 8; ++i) {  // [a.L0+a.L2, a.L1+a.L3, b.L0+b.L2, b.L1+b.L3] (128-bit lanes)
    t[i] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, acc[2 * i], acc[2 * i + 1], 0x44),
                         _mm512_maskz_shuffle_f32x4(all, acc[2 * i], acc[2 * i + 1], 0xEE));
  }
  for (int i = 0; i < 4; ++i) {  // lane j: 4 partial sums of acc[4i + j]
    u[i] = _mm512_add_ps(_mm512_maskz_shuffle_f32x4(all, t[2 * i], t[2 * i + 1], 0x88),
                         _mm512_maskz_shuffle_f32x4(all, t[2 * i], t[2 * i + 1], 0xDD));
  }
  for (int i = 0; i < 2; ++i) {
    v[i] = _mm512_add_ps(_mm512_maskz_unpacklo_ps(all, u[2 * i], u[2 * i + 1]),
                         _mm512_maskz_unpackhi_ps(all, u[2 * i], u[2 * i + 1]));
  }
  // Element 4j + i holds the sum of acc[4i + j]; put it back in order, round once.
  const __m512 w = _mm512_add_ps(_mm512_maskz_shuffle_ps(all, v[0], v[1], 0x44),
                                 _mm512_maskz_shuffle_ps(all, v[0], v[1], 0xEE));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_permutexvar_ps(all, order, w)));
}

// One 32-wide step of tile(): NR weight vectors, then each of MR x vectors against them.
template <int MR, int NR>
FERRY_AVX512_BF16 inline void tile_step(__m512* acc, const bf16* x, int64_t ldx, const bf16* w, int64_t k_len,
                                        int64_t k, __mmask32 mask) {
  __m512bh wv[NR];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) wv[r] = load(w + r * k_len + k, mask);
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    const __m512bh xv = load(x + m * ldx + k, mask);
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) acc[m * NR + r] = _mm512_dpbf16_ps(acc[m * NR + r], xv, wv[r]);
  }
}

// MR x rows (ldx apart) against NR consecutive w rows: every weight vector loaded feeds
// MR multiply-adds and every x vector NR, so a verify block reads each weight once
// from memory and x from cache.
template <int MR, int NR>
FERRY_AVX512_BF16 void tile(const bf16* x, int64_t ldx, const bf16* w, int64_t k_len, bf16* out, int64_t ldo) {
  constexpr int kAcc = MR * NR, kPadded = (kAcc + 15) / 16 * 16;
  __m512 acc[kAcc];
#pragma GCC unroll 32
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_setzero_ps();
  const int64_t k_vec = k_len / 32 * 32;
  for (int64_t k = 0; k < k_vec; k += 32) tile_step<MR, NR>(acc, x, ldx, w, k_len, k, static_cast<__mmask32>(~0U));
  if (k_vec < k_len) {
    tile_step<MR, NR>(acc, x, ldx, w, k_len, k_vec, static_cast<__mmask32>((uint64_t{1} << (k_len - k_vec)) - 1));
  }
  // Summed from a copy: taking acc's address would keep it in memory through the loop.
  __m512 done[kPadded];
#pragma GCC unroll 32
  for (int i = 0; i < kPadded; ++i) done[i] = i < kAcc ? acc[i] : _mm512_setzero_ps();
  bf16 sums[kPadded];
  for (int i = 0; i < kPadded; i += 16) sum16(done + i, sums + i);
  for (int m = 0; m < MR; ++m) {
    for (int r = 0; r < NR; ++r) out[m * ldo + r] = sums[m * NR + r];
  }
}

template <int NR>
void tile_rows(int mr, const bf16* x, int64_t ldx, const bf16* w, int64_t k_len, bf16* out, int64_t ldo) {
  switch (mr) {
    case 1: return tile<1, NR>(x, ldx, w, k_len, out, ldo);
    case 2: return tile<2, NR>(x, ldx, w, k_len, out, ldo);
    case 3: return tile<3, NR>(x, ldx, w, k_len, out, ldo);
    case 4: return tile<4, NR>(x, ldx, w, k_len, out, ldo);
    case 5: return tile<5, NR>(x, ldx, w, k_len, out, ldo);
    case 6: return tile<6, NR>(x, ldx, w, k_len, out, ldo);
    case 7: return tile<7, NR>(x, ldx, w, k_len, out, ldo);
    default: return tile<8, NR>(x, ldx, w, k_len, out, ldo);
  }
}

// Rows [n0, n1) of the output for all m_len rows of x: weight rows kTileWeightRows at a
// time, each group against x in groups of kMaxTileRows (the weight rows stay in L1
// between x groups).
void gemm_rows(const bf16* x, int64_t m_len, const bf16* w, int64_t k_len, int64_t n0, int64_t n1, bf16* out,
               int64_t n_len) {
  int64_t n = n0;
  for (; n + kTileWeightRows <= n1; n += kTileWeightRows) {
    for (int64_t m = 0; m < m_len; m += kMaxTileRows) {
      const int mr = static_cast<int>(std::min<int64_t>(kMaxTileRows, m_len - m));
      tile_rows<kTileWeightRows>(mr, x + m * k_len, k_len, w + n * k_len, k_len, out + m * n_len + n, n_len);
    }
  }
  for (; n < n1; ++n) {
    for (int64_t m = 0; m < m_len; m += kMaxTileRows) {
      const int mr = static_cast<int>(std::min<int64_t>(kMaxTileRows, m_len - m));
      tile_rows<1>(mr, x + m * k_len, k_len, w + n * k_len, k_len, out + m * n_len + n, n_len);
    }
  }
}

}  // namespace

void set_bf16_kernel_enabled(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }

bool bf16_kernel_enabled() { return g_enabled.load(std::memory_order_relaxed) && bf16_kernel_supported(); }

bool bf16_linear_applies(const at::Tensor& x, const at::Tensor& w) {
  return g_enabled.load(std::memory_order_relaxed) && x.scalar_type() == at::kBFloat16 &&
         w.scalar_type() == at::kBFloat16 && x.device().is_cpu() && w.device().is_cpu() && x.dim() == 2 &&
         w.dim() == 2 && x.size(0) >= 1 && x.size(0) <= kBf16LinearMaxRows && x.size(1) == w.size(1) && x.size(1) > 0 &&
         (x.size(0) == 1 || x.size(1) >= kBf16LinearMinBlockDepth) && x.is_contiguous() && w.is_contiguous() &&
         bf16_kernel_supported();
}

at::Tensor bf16_linear(const at::Tensor& x, const at::Tensor& w) {
  const int64_t m_len = x.size(0), k_len = x.size(1), n_len = w.size(0);
  at::Tensor out = at::empty({m_len, n_len}, x.options());
  const bf16* xp = x.data_ptr<bf16>();
  const bf16* wp = w.data_ptr<bf16>();
  bf16* op = out.data_ptr<bf16>();
  for_each_chunk((n_len + kChunkRows - 1) / kChunkRows, [&](int64_t c) {
    const int64_t n0 = c * kChunkRows, n1 = std::min(n_len, n0 + kChunkRows);
    if (m_len == 1) {
      gemv_rows(xp, wp, k_len, n0, n1, op);
    } else {
      gemm_rows(xp, m_len, wp, k_len, n0, n1, op, n_len);
    }
  });
  return out;
}

}  // namespace ferry::eval
