#include "jobs/eval/cpu/gdn_conv_qk.h"

#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cmath>

#include "jobs/eval/cpu/tensor_ops.h"

namespace ferry::eval {
namespace {

bool float32_on_cpu(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat && t.device().is_cpu() && t.is_contiguous() && t.dim() == 2;
}

}  // namespace

bool gdn_conv_qk_small_f32_applies(const at::Tensor& qkv, const at::Tensor& conv_state, const at::Tensor& conv_weight) {
  return small_f32_enabled() && (qkv.scalar_type() == at::kFloat || qkv.scalar_type() == at::kBFloat16) &&
         qkv.device().is_cpu() && qkv.is_contiguous() && qkv.dim() == 2 && qkv.numel() <= kSmallF32Values &&
         float32_on_cpu(conv_state) && float32_on_cpu(conv_weight) && conv_state.size(1) == qkv.size(1) &&
         conv_weight.size(1) == qkv.size(1) && conv_weight.size(0) == conv_state.size(0) + 1;
}

GdnConvQk gdn_conv_qk_small_f32(const GdnConvQkShape& shape, const at::Tensor& qkv, const at::Tensor& conv_state,
                                const at::Tensor& conv_weight) {
  const int64_t t_len = qkv.size(0), c = qkv.size(1), kernel = conv_weight.size(0);
  const int64_t hk = shape.key_heads, hv = shape.value_heads, dk = shape.key_dim, rep = hv / hk;
  const int64_t kd = hk * dk;
  const auto f32 = conv_state.options();

  // The window, as at::cat makes it (the BF16 rows widened exactly, as .to(kFloat)).
  GdnConvQk out;
  out.window = at::empty({kernel - 1 + t_len, c}, f32);
  float* window = out.window.data_ptr<float>();
  const int64_t state_values = (kernel - 1) * c;
  std::copy(conv_state.data_ptr<float>(), conv_state.data_ptr<float>() + state_values, window);
  if (qkv.scalar_type() == at::kFloat) {
    std::copy(qkv.data_ptr<float>(), qkv.data_ptr<float>() + qkv.numel(), window + state_values);
  } else {
    const c10::BFloat16* in = qkv.data_ptr<c10::BFloat16>();
    for (int64_t i = 0; i < qkv.numel(); ++i) window[state_values + i] = static_cast<float>(in[i]);
  }

  // window[t] * w[0], then addcmul_ of each later row: libtorch's vectorised addcmul_
  // (AVX2, AVX-512) is compiled to one fused multiply-add, so fma here too.
  at::Tensor conv = at::empty({t_len, c}, f32);
  float* cp = conv.data_ptr<float>();
  const float* w = conv_weight.data_ptr<float>();
  for (int64_t t = 0; t < t_len; ++t) {
    float* o = cp + t * c;
    const float* x = window + t * c;
    for (int64_t i = 0; i < c; ++i) o[i] = x[i] * w[i];
    for (int64_t j = 1; j < kernel; ++j) {
      const float* xj = x + j * c;
      const float* wj = w + j * c;
      for (int64_t i = 0; i < c; ++i) o[i] = std::fma(xj[i], wj[i], o[i]);
    }
  }
  at::silu_(conv);

  // q and k heads' sums of squares in one libtorch reduction (a row's sum is the same
  // whichever rows lie beside it), then x * (1 / sqrt(sum + eps)), q times the scale,
  // each rounded, written once per value head that reads the key head.
  at::Tensor squares = at::empty({t_len, 2 * hk, dk}, f32);
  float* sq = squares.data_ptr<float>();
  for (int64_t t = 0; t < t_len; ++t) {
    const float* x = cp + t * c;
    float* s = sq + t * 2 * kd;
    for (int64_t i = 0; i < 2 * kd; ++i) s[i] = x[i] * x[i];
  }
  const at::Tensor sums = squares.sum(-1);  // [T, 2 Hk]
  const float* sum = sums.data_ptr<float>();
  const float eps = static_cast<float>(shape.l2_eps);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(dk)));
  out.q = at::empty({t_len, hv, dk}, f32);
  out.k = at::empty({t_len, hv, dk}, f32);
  float* qp = out.q.data_ptr<float>();
  float* kp = out.k.data_ptr<float>();
  for (int64_t t = 0; t < t_len; ++t) {
    for (int64_t h = 0; h < hk; ++h) {
      const float q_inv = 1.0f / std::sqrt(sum[t * 2 * hk + h] + eps);
      const float k_inv = 1.0f / std::sqrt(sum[t * 2 * hk + hk + h] + eps);
      const float* qx = cp + t * c + h * dk;
      const float* kx = cp + t * c + kd + h * dk;
      float* q0 = qp + (t * hv + h * rep) * dk;
      float* k0 = kp + (t * hv + h * rep) * dk;
      for (int64_t i = 0; i < dk; ++i) {
        q0[i] = (qx[i] * q_inv) * scale;
        k0[i] = kx[i] * k_inv;
      }
      for (int64_t r = 1; r < rep; ++r) {
        std::copy(q0, q0 + dk, q0 + r * dk);
        std::copy(k0, k0 + dk, k0 + r * dk);
      }
    }
  }
  out.v = conv.narrow(1, 2 * kd, hv * shape.value_dim).reshape({t_len, hv, shape.value_dim});
  return out;
}

}  // namespace ferry::eval
