// Small AVX-512 helpers shared by the BF16 kernels and the GDN recurrence: lane sums
// and maxima, BF16 widening, narrowing and rounding, exp. Each is compiled for AVX-512
// whatever the build's -march (FERRY_AVX512_BF16) and only reached after the cpuid
// check (bf16_kernel_supported(), cpu_features.h). The maskz forms throughout: GCC 12's plain ones trip
// -Wmaybe-uninitialized in its own headers.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "jobs/eval/cpu/cpu_features.h"

namespace ferry::eval {

/// Sum of a vector's 16 float32 lanes.
FERRY_AVX512_BF16 inline float sum_lanes(__m512 v) {
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0xB1));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(0xFFFF, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(0xFFFF, v, 0xB1));
  return _mm512_cvtss_f32(v);
}

/// The lanes of a vector that hold the `left` values still to go: all 16, or the first few.
inline __mmask16 lanes_for(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1U << left) - 1);
}

/// Largest of a vector's 16 float32 lanes.
FERRY_AVX512_BF16 inline float max_lanes(__m512 v) {
  v = _mm512_maskz_max_ps(0xFFFF, v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0x4E));
  v = _mm512_maskz_max_ps(0xFFFF, v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0xB1));
  v = _mm512_maskz_max_ps(0xFFFF, v, _mm512_maskz_permute_ps(0xFFFF, v, 0x4E));
  v = _mm512_maskz_max_ps(0xFFFF, v, _mm512_maskz_permute_ps(0xFFFF, v, 0xB1));
  return _mm512_cvtss_f32(v);
}

/// 16 BF16 values (their raw bits) widened to float32: exact, BF16 is float32's top half.
FERRY_AVX512_BF16 inline __m512 widen_bf16x16(__m256i raw) {
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, raw), 16));
}

/// The same, loaded from the 16 BF16 values at p.
FERRY_AVX512_BF16 inline __m512 load_bf16x16(const void* p) {
  return widen_bf16x16(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
}

/// To BF16 bits, nearest with ties to even, as libtorch rounds float32 to BF16.
FERRY_AVX512_BF16 inline __m256i narrow_bf16x16(__m512 v) { return (__m256i)_mm512_cvtneps_pbh(v); }

/// v rounded to BF16 (as narrow_bf16x16) and stored as 16 BF16 values at p.
FERRY_AVX512_BF16 inline void store_bf16x16(void* p, __m512 v) {
  _mm256_storeu_si256(static_cast<__m256i*>(p), narrow_bf16x16(v));
}

/// v rounded to BF16 and widened back: what a libtorch BF16 op leaves between two ops.
FERRY_AVX512_BF16 inline __m512 round_bf16x16(__m512 v) { return widen_bf16x16(narrow_bf16x16(v)); }

/// e^x in float32: 2^n · e^r with |r| <= ln2/2, e^r by its Taylor series to r^7
/// (truncation < 3e-9 relative), 2^n by vscalefps; below -88 (and -inf) exactly 0,
/// above 88.7 +inf (float32's own overflow).
FERRY_AVX512_BF16 inline __m512 exp_lanes(__m512 x) {
  const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-88.0f), _CMP_GE_OQ);
  x = _mm512_maskz_min_ps(0xFFFF, _mm512_maskz_max_ps(0xFFFF, x, _mm512_set1_ps(-88.0f)), _mm512_set1_ps(89.0f));
  const __m512 n = _mm512_maskz_roundscale_ps(0xFFFF, _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);  // ln2 split: hi exact in float
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(live, p, n);
}

}  // namespace ferry::eval
