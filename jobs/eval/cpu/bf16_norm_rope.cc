#include "jobs/eval/cpu/bf16_norm_rope.h"


#include <cmath>

#include "jobs/eval/cpu/avx512_lanes.h"
#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/compute_threads.h"

namespace ferry::eval {
namespace {

using bf16 = c10::BFloat16;

FERRY_AVX512_BF16 void norm_row(const bf16* x, const bf16* w, int64_t h, float eps, bf16* out) {
  __m512 squares = _mm512_setzero_ps();
  for (int64_t i = 0; i < h; i += 16) {
    const __m512 v = load_bf16x16(x + i);
    squares = _mm512_add_ps(squares, _mm512_mul_ps(v, v));  // each square rounded, as pow(2) is
  }
  const float r = 1.0f / std::sqrt(sum_lanes(squares) / static_cast<float>(h) + eps);
  const __m512 scale = _mm512_set1_ps(r);
  for (int64_t i = 0; i < h; i += 16) {
    store_bf16x16(out + i,
                  _mm512_mul_ps(load_bf16x16(w + i), round_bf16x16(_mm512_mul_ps(load_bf16x16(x + i), scale))));
  }
}

FERRY_AVX512_BF16 void rope_row(const bf16* x, const bf16* cos, const bf16* sin, int64_t d, bf16* out) {
  const int64_t half = d / 2;
  for (int64_t j = 0; j < half; j += 16) {
    const __m512 a = load_bf16x16(x + j), b = load_bf16x16(x + half + j);
    // First half: a cos - b sin; second: b cos + a sin; each product rounded, then the sum.
    const __m512 first = _mm512_sub_ps(round_bf16x16(_mm512_mul_ps(a, load_bf16x16(cos + j))),
                                       round_bf16x16(_mm512_mul_ps(b, load_bf16x16(sin + j))));
    const __m512 second = _mm512_add_ps(round_bf16x16(_mm512_mul_ps(b, load_bf16x16(cos + half + j))),
                                        round_bf16x16(_mm512_mul_ps(a, load_bf16x16(sin + half + j))));
    store_bf16x16(out + j, first);
    store_bf16x16(out + half + j, second);
  }
}

// Rows per task when split over threads: each is a few hundred nanoseconds, so only
// large batches (a prefill chunk's norms) are worth a parallel region.
constexpr int64_t kRowsPerTask = 256;
// Head size up to which bf16_norm_rope_heads keeps a normed row on the stack.
constexpr int64_t kMaxHeadDim = 1024;

}  // namespace

bool bf16_rms_norm_applies(const at::Tensor& x, const at::Tensor& w) {
  return bf16_kernel_enabled() && x.scalar_type() == at::kBFloat16 && w.scalar_type() == at::kBFloat16 &&
         x.device().is_cpu() && w.device().is_cpu() && x.dim() >= 1 && x.is_contiguous() && w.dim() == 1 &&
         w.is_contiguous() && x.size(-1) == w.size(0) && w.size(0) > 0 && w.size(0) % 16 == 0;
}

at::Tensor bf16_rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  TORCH_CHECK(bf16_rms_norm_applies(x, w), "bf16_rms_norm: unsupported input");
  at::Tensor out = at::empty_like(x);
  const int64_t h = w.size(0), rows = x.numel() / h;
  const bf16* xp = x.data_ptr<bf16>();
  const bf16* wp = w.data_ptr<bf16>();
  bf16* op = out.data_ptr<bf16>();
  const auto e = static_cast<float>(eps);  // libtorch adds eps as a float32 scalar
  for_each_chunk((rows + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t c) {
    const int64_t first = c * kRowsPerTask, end = std::min(rows, first + kRowsPerTask);
    for (int64_t r = first; r < end; ++r) norm_row(xp + r * h, wp, h, e, op + r * h);
  });
  return out;
}

bool bf16_rope_applies(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  if (!bf16_kernel_enabled() || x.dim() < 2) return false;
  for (const at::Tensor* t : {&x, &cos, &sin}) {
    if (t->scalar_type() != at::kBFloat16 || !t->device().is_cpu() || !t->is_contiguous()) return false;
  }
  const int64_t t = x.size(-2), d = x.size(-1);
  return d > 0 && d % 32 == 0 && cos.dim() == 2 && cos.size(0) == t && cos.size(1) == d && sin.sizes() == cos.sizes();
}

at::Tensor bf16_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  TORCH_CHECK(bf16_rope_applies(x, cos, sin), "bf16_rope: unsupported input");
  at::Tensor out = at::empty_like(x);
  const int64_t t = x.size(-2), d = x.size(-1), rows = x.numel() / d;
  const bf16* xp = x.data_ptr<bf16>();
  const bf16* cp = cos.data_ptr<bf16>();
  const bf16* sp = sin.data_ptr<bf16>();
  bf16* op = out.data_ptr<bf16>();
  for_each_chunk((rows + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t c) {
    const int64_t first = c * kRowsPerTask, end = std::min(rows, first + kRowsPerTask);
    for (int64_t r = first; r < end; ++r) rope_row(xp + r * d, cp + (r % t) * d, sp + (r % t) * d, d, op + r * d);
  });
  return out;
}

bool bf16_norm_rope_heads_applies(const at::Tensor& x, const at::Tensor& w, const at::Tensor& cos,
                                  const at::Tensor& sin) {
  if (!bf16_rms_norm_applies(x, w) || x.dim() != 3 || x.size(2) > kMaxHeadDim) return false;
  for (const at::Tensor* t : {&cos, &sin}) {
    if (t->scalar_type() != at::kBFloat16 || !t->device().is_cpu() || !t->is_contiguous()) return false;
  }
  const int64_t t = x.size(0), d = x.size(2);
  return d % 32 == 0 && cos.dim() == 2 && cos.size(0) == t && cos.size(1) == d && sin.sizes() == cos.sizes();
}

at::Tensor bf16_norm_rope_heads(const at::Tensor& x, const at::Tensor& w, double eps, const at::Tensor& cos,
                                const at::Tensor& sin) {
  TORCH_CHECK(bf16_norm_rope_heads_applies(x, w, cos, sin), "bf16_norm_rope_heads: unsupported input");
  const int64_t t = x.size(0), heads = x.size(1), d = x.size(2);
  at::Tensor out = at::empty({heads, t, d}, x.options());
  const bf16* xp = x.data_ptr<bf16>();
  const bf16* wp = w.data_ptr<bf16>();
  const bf16* cp = cos.data_ptr<bf16>();
  const bf16* sp = sin.data_ptr<bf16>();
  bf16* op = out.data_ptr<bf16>();
  const auto e = static_cast<float>(eps);
  const int64_t rows = t * heads;
  for_each_chunk((rows + kRowsPerTask - 1) / kRowsPerTask, [&](int64_t c) {
    const int64_t first = c * kRowsPerTask, end = std::min(rows, first + kRowsPerTask);
    alignas(64) bf16 normed[kMaxHeadDim];
    for (int64_t r = first; r < end; ++r) {
      const int64_t i = r / heads, h = r % heads;  // x's row r is position i of head h
      norm_row(xp + r * d, wp, d, e, normed);
      rope_row(normed, cp + i * d, sp + i * d, d, op + (h * t + i) * d);
    }
  });
  return out;
}

}  // namespace ferry::eval
