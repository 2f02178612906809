#include "jobs/eval/cpu/bf16_silu_mul.h"

#include "jobs/eval/cpu/avx512_lanes.h"
#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/compute_threads.h"

#include <algorithm>

namespace ferry::eval {
namespace {

using bf16 = c10::BFloat16;

// Values a thread takes at a time: ~1 us of work, so a decode step's one row of 4,096
// stays on the calling thread (for_each_chunk wants two chunks a thread).
constexpr int64_t kChunkValues = 2048;

FERRY_AVX512_BF16 void silu_mul(bf16* gate, const bf16* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 g = load_bf16x16(gate + i);
    // silu as libtorch 1.13 computes it for BF16: x / (1 + e^-x) with every op's result
    // rounded to BF16 (its BF16 vector ops widen, compute and narrow one op at a time).
    const __m512 e = round_bf16x16(exp_lanes(_mm512_sub_ps(_mm512_setzero_ps(), g)));
    const __m512 s = round_bf16x16(_mm512_div_ps(g, round_bf16x16(_mm512_add_ps(one, e))));
    store_bf16x16(gate + i, _mm512_mul_ps(s, load_bf16x16(up + i)));
  }
}

}  // namespace

bool bf16_silu_mul_applies(const at::Tensor& gate, const at::Tensor& up) {
  return bf16_kernel_enabled() && gate.scalar_type() == at::kBFloat16 && up.scalar_type() == at::kBFloat16 &&
         gate.device().is_cpu() && up.device().is_cpu() && gate.is_contiguous() && up.is_contiguous() &&
         gate.sizes() == up.sizes() && gate.numel() % 16 == 0;
}

void bf16_silu_mul_(const at::Tensor& gate, const at::Tensor& up) {
  TORCH_CHECK(bf16_silu_mul_applies(gate, up), "bf16_silu_mul_: unsupported input");
  const int64_t n = gate.numel();
  bf16* gp = gate.data_ptr<bf16>();
  const bf16* up_p = up.data_ptr<bf16>();
  for_each_chunk((n + kChunkValues - 1) / kChunkValues, [&](int64_t c) {
    const int64_t first = c * kChunkValues;
    silu_mul(gp + first, up_p + first, std::min(kChunkValues, n - first));
  });
}

}  // namespace ferry::eval
