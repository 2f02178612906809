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

}  // namespace ferry::eval
