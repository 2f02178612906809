// Small AVX-512 helpers shared by the BF16 kernels (bf16_linear, bf16_attention). Each
// is compiled for AVX-512 whatever the build's -march and only reached after the cpuid
// check (bf16_kernel_supported()). The maskz forms throughout: GCC 12's plain ones trip
// -Wmaybe-uninitialized in its own headers.
#pragma once

#include <immintrin.h>

#define FERRY_AVX512_LANES __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace ferry::eval {

/// Sum of a vector's 16 float32 lanes.
FERRY_AVX512_LANES inline float sum_lanes(__m512 v) {
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(0xFFFF, v, v, 0xB1));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(0xFFFF, v, 0x4E));
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(0xFFFF, v, 0xB1));
  return _mm512_cvtss_f32(v);
}

/// 16 BF16 values (their raw bits) widened to float32: exact, BF16 is float32's top half.
FERRY_AVX512_LANES inline __m512 widen_bf16x16(__m256i raw) {
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, raw), 16));
}

/// The same, loaded from the 16 BF16 values at p.
FERRY_AVX512_LANES inline __m512 load_bf16x16(const void* p) {
  return widen_bf16x16(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
}

}  // namespace ferry::eval
