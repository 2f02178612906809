#include "jobs/eval/cpu/tensor_ops.h"

#include "jobs/eval/cpu/bf16_attention.h"
#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/bf16_norm_rope.h"
#include "jobs/eval/cpu/bf16_silu_mul.h"
#include "jobs/eval/cpu/cpu_runtime.h"
#include "jobs/eval/cpu/packed_bf16_linear.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

namespace ferry::eval {
namespace {

// Smallest KV capacity allocated; later growth doubles.
constexpr int64_t kMinCacheCapacity = 256;

std::atomic<bool> g_small_f32{true};

// A small float32 tensor on the CPU whose values lie contiguously (the loops below).
bool small_f32(const at::Tensor& t) {
  return t.scalar_type() == at::kFloat && t.device().is_cpu() && t.is_contiguous() && t.numel() <= kSmallF32Values &&
         g_small_f32.load(std::memory_order_relaxed);
}

// rms_norm() of small float32 rows, as libtorch computes
// weight * (x * rsqrt(mean(x * x) + eps)): x.pow(2) is x * x; libtorch 1.13's CPU mean is
// its sum over the row (called here, on a tensor of x's shape: `out`, which then takes
// the result) divided by the row's length, a float division; eps is added as a float,
// rsqrt is 1 / sqrt, then two products, each rounded. `row(r, values)` gets
// each normed row (in `out`, where the caller may rewrite it).
template <typename Row>
void rms_norm_small_f32_into(const at::Tensor& x, const at::Tensor& weight, double eps, const at::Tensor& out,
                             Row&& row) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  const float* xp = x.data_ptr<float>();
  const float* wp = weight.data_ptr<float>();
  float* op = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) op[i] = xp[i] * xp[i];
  const at::Tensor sum = out.sum(-1, /*keepdim=*/true);
  const float* mp = sum.data_ptr<float>();
  const float e = static_cast<float>(eps), n = static_cast<float>(d);
  for (int64_t r = 0; r < rows; ++r) {
    const float inv = 1.0f / std::sqrt(mp[r] / n + e);
    const float* xr = xp + r * d;
    float* o = op + r * d;
    for (int64_t i = 0; i < d; ++i) o[i] = wp[i] * (xr[i] * inv);
    row(r, o);
  }
}

at::Tensor rms_norm_small_f32(const at::Tensor& x, const at::Tensor& weight, double eps) {
  at::Tensor out = at::empty_like(x);
  rms_norm_small_f32_into(x, weight, eps, out, [](int64_t, float*) {});
  return out;
}

bool small_norm_applies(const at::Tensor& x, const at::Tensor& weight) {
  return small_f32(x) && weight.scalar_type() == at::kFloat && weight.is_contiguous() && weight.dim() == 1 &&
         weight.size(0) == x.size(-1) && weight.device().is_cpu();
}

// sgemv_ as libtorch's own calls bind to it (null: not found, libtorch's at::mv then).
using SgemvFn = void (*)(const char*, const int*, const int*, const float*, const float*, const int*, const float*,
                         const int*, const float*, float*, const int*);
SgemvFn sgemv() {
  static const SgemvFn fn = reinterpret_cast<SgemvFn>(libtorch_blas_symbol("sgemv_"));
  return fn;
}

}  // namespace

void set_small_f32_enabled(bool enabled) { g_small_f32.store(enabled, std::memory_order_relaxed); }
bool small_f32_enabled() { return g_small_f32.load(std::memory_order_relaxed); }

at::Tensor residual_add(const at::Tensor& x, const at::Tensor& y) {
  if (!small_f32(x) || !small_f32(y) || x.sizes() != y.sizes()) return x + y;
  at::Tensor out = at::empty_like(x);
  const float* a = x.data_ptr<float>();
  const float* b = y.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = a[i] + b[i];
  return out;
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (bf16_rms_norm_applies(x, weight)) return bf16_rms_norm(x, weight, eps);
  if (small_norm_applies(x, weight)) return rms_norm_small_f32(x, weight, eps);
  at::Tensor x32 = x.to(at::kFloat);
  at::Tensor normed = x32 * at::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * normed.to(x.scalar_type());
}

RopeTables rope_tables(int64_t first_position, int64_t count, int64_t head_dim, double theta,
                       const ComputeOptions& options) {
  auto f32 = at::TensorOptions().dtype(at::kFloat).device(options.device);
  // inv_freq = 1 / theta^(2i/d), computed in float32 as Hugging Face does.
  at::Tensor exponent = at::arange(0, head_dim, 2, f32.dtype(at::kLong)).to(at::kFloat) / static_cast<double>(head_dim);
  at::Tensor inv_freq = 1.0 / at::pow(at::scalar_tensor(theta, f32), exponent);
  at::Tensor pos = at::arange(first_position, first_position + count, f32.dtype(at::kLong)).to(at::kFloat);
  at::Tensor freqs = at::outer(pos, inv_freq);         // [T, hd/2]
  at::Tensor emb = at::cat({freqs, freqs}, -1);        // [T, hd]
  return {emb.cos().to(options.dtype), emb.sin().to(options.dtype)};
}

void RopeCache::reserve(int64_t positions) {
  if (positions <= capacity_) return;
  capacity_ = std::max<int64_t>({positions, 2 * capacity_, kMinCacheCapacity});
  table_ = rope_tables(0, capacity_, head_dim_, theta_, options_);
}

RopeTables RopeCache::at(int64_t first_position, int64_t count) {
  reserve(first_position + count);
  return {table_.cos.narrow(0, first_position, count), table_.sin.narrow(0, first_position, count)};
}

at::Tensor apply_rope(const at::Tensor& x, const RopeTables& rope) {
  if (bf16_rope_applies(x, rope.cos, rope.sin)) return bf16_rope(x, rope.cos, rope.sin);
  const int64_t half = x.size(-1) / 2;
  at::Tensor x1 = x.narrow(-1, 0, half);
  at::Tensor x2 = x.narrow(-1, half, half);
  at::Tensor rotated = at::cat({-x2, x1}, -1);
  return x * rope.cos + rotated * rope.sin;
}

at::Tensor norm_rope_heads(const at::Tensor& x, const at::Tensor& weight, double eps, const RopeTables& rope) {
  if (bf16_norm_rope_heads_applies(x, weight, rope.cos, rope.sin)) {
    return bf16_norm_rope_heads(x, weight, eps, rope.cos, rope.sin);
  }
  const int64_t t = x.dim() == 3 ? x.size(0) : 0, hd = x.size(-1);
  if (t > 0 && hd % 2 == 0 && small_norm_applies(x, weight) && small_f32(rope.cos) && small_f32(rope.sin) &&
      rope.cos.dim() == 2 && rope.cos.size(0) == t && rope.cos.size(1) == hd && rope.sin.sizes() == rope.cos.sizes()) {
    // rms_norm, then apply_rope's x * cos + cat(-x2, x1) * sin, in place row by row
    // ([T, heads, hd] rows, as x's): each product rounded, then their sum; the negation
    // is exact. Returned laid out as libtorch's element-wise ops lay out their result for
    // the transposed input: [T, heads, hd] in memory (with one row or one head, plain
    // [heads, T, hd], strides included).
    const int64_t heads = x.size(1), half = hd / 2;
    at::Tensor out = at::empty_like(x);
    const float* c = rope.cos.data_ptr<float>();
    const float* s = rope.sin.data_ptr<float>();
    std::vector<float> in(static_cast<size_t>(hd));
    rms_norm_small_f32_into(x, weight, eps, out, [&](int64_t row, float* dst) {
      const int64_t r = row / heads;
      const float* cr = c + r * hd;
      const float* sr = s + r * hd;
      std::copy(dst, dst + hd, in.begin());
      for (int64_t i = 0; i < half; ++i) dst[i] = in[i] * cr[i] + (-in[i + half]) * sr[i];
      for (int64_t i = half; i < hd; ++i) dst[i] = in[i] * cr[i] + in[i - half] * sr[i];
    });
    return t == 1 || heads == 1 ? out.view({heads, t, hd}) : out.transpose(0, 1);
  }
  return apply_rope(rms_norm(x, weight, eps).transpose(0, 1), rope);
}

at::Tensor causal_mask(int64_t t, int64_t s, int64_t causal_past, const at::Device& device) {
  if (causal_past < 0 || (t <= 1 && causal_past + t >= s)) return at::Tensor();
  return at::full({t, s}, -std::numeric_limits<float>::infinity(), at::TensorOptions().dtype(at::kFloat).device(device))
      .triu(causal_past + 1);
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t causal_past) {
  return attention_with_mask(q, k, v, causal_mask(q.size(1), k.size(1), causal_past, q.device()));
}

at::Tensor attention_with_mask(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  if (bf16_attention_applies(q, k, v, mask)) return bf16_attention(q, k, v, mask);
  const int64_t num_heads = q.size(0);
  const int64_t t = q.size(1);
  const int64_t hd = q.size(2);
  const int64_t num_kv = k.size(0);
  const int64_t s = k.size(1);
  const int64_t rep = num_heads / num_kv;
  // Query head h uses kv head h / rep: group the rep query heads of one kv head
  // together so one batched matmul serves them without repeating k and v.
  at::Tensor qg = q.reshape({num_kv, rep * t, hd});
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  at::Tensor scores = at::bmm(qg, k.transpose(1, 2));
  if (small_f32(scores)) {
    // `scores * scale` in place on the fresh product: the scale rounded to float, each
    // product rounded, as libtorch's mul by a scalar.
    float* p = scores.data_ptr<float>();
    const float f = static_cast<float>(scale);
    for (int64_t i = 0; i < scores.numel(); ++i) p[i] = p[i] * f;
  } else {
    scores = scores * scale;
  }
  at::Tensor scores32 = scores.scalar_type() == at::kFloat ? scores : scores.to(at::kFloat);
  if (mask.defined()) scores32 = (scores32.view({num_kv, rep, t, s}) + mask).view({num_kv, rep * t, s});
  at::Tensor probs = at::softmax(scores32, -1);
  if (probs.scalar_type() != q.scalar_type()) probs = probs.to(q.scalar_type());
  at::Tensor out = at::bmm(probs, v);  // [num_kv, rep*t, hd]
  return out.view({num_heads, t, hd}).transpose(0, 1).reshape({t, num_heads * hd});
}

at::Tensor project(const at::Tensor& x, const at::Tensor& w) {
  if (is_packed_bf16_weight(w)) return packed_bf16_linear(x, w);
  if (bf16_linear_applies(x, w)) return bf16_linear(x, w);
  if (w.device().is_cpu() && x.size(0) == 1 && x.scalar_type() == at::kFloat) {
    if (small_f32(x) && w.scalar_type() == at::kFloat && w.dim() == 2 && w.is_contiguous() && w.size(1) == x.size(1) &&
        w.size(0) <= std::numeric_limits<int>::max() && w.size(1) <= std::numeric_limits<int>::max() &&
        sgemv() != nullptr) {
      // The call at::mv makes (addmv on a row-major matrix: its transpose, column-major,
      // with beta 0), without the dispatch around it.
      at::Tensor out = at::empty({1, w.size(0)}, x.options());
      const char trans = 't';
      const int m = static_cast<int>(w.size(1)), n = static_cast<int>(w.size(0)), one = 1;
      const float alpha = 1, beta = 0;
      sgemv()(&trans, &m, &n, &alpha, w.data_ptr<float>(), &m, x.data_ptr<float>(), &one, &beta,
              out.data_ptr<float>(), &one);
      return out;
    }
    return at::mv(w, x.select(0, 0)).unsqueeze(0);
  }
  return at::linear(x, w);
}

at::Tensor project_columns(const at::Tensor& x, const at::Tensor& w, int64_t columns) {
  at::Tensor out = project(x, w);
  return out.size(-1) == columns ? out : out.narrow(-1, 0, columns);
}

std::vector<at::Tensor> project_all(const at::Tensor& x, const std::vector<at::Tensor>& weights) {
  std::vector<at::Tensor> out(weights.size()), packed;
  std::vector<size_t> packed_at;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (is_packed_bf16_weight(weights[i]) && (packed.empty() || weights[i].size(1) == packed[0].size(1))) {
      packed.push_back(weights[i]);
      packed_at.push_back(i);
    } else {
      out[i] = project(x, weights[i]);
    }
  }
  if (packed.size() == 1) out[packed_at[0]] = project(x, packed[0]);
  if (packed.size() > 1) {
    std::vector<at::Tensor> results = packed_bf16_linear_all(x, packed);
    for (size_t j = 0; j < packed.size(); ++j) out[packed_at[j]] = results[j];
  }
  return out;
}

at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate_up, const at::Tensor& down) {
  at::Tensor gu = at::linear(x, gate_up);
  const int64_t inter = gu.size(-1) / 2;
  return at::linear(at::silu(gu.narrow(-1, 0, inter)) * gu.narrow(-1, inter, inter), down);
}

at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate, const at::Tensor& up, const at::Tensor& down) {
  // In place on the gate's output: the same values with two [T, I] buffers fewer (a
  // prefill chunk's largest temporaries).
  std::vector<at::Tensor> gate_up = project_all(x, {gate, up});
  at::Tensor h = gate_up[0];
  if (bf16_silu_mul_applies(h, gate_up[1])) {
    bf16_silu_mul_(h, gate_up[1]);
  } else if (small_f32(h) && small_f32(gate_up[1]) && h.sizes() == gate_up[1].sizes()) {
    at::silu_(h);
    float* g = h.data_ptr<float>();
    const float* u = gate_up[1].data_ptr<float>();
    for (int64_t i = 0; i < h.numel(); ++i) g[i] = g[i] * u[i];  // mul_'s product
  } else {
    at::silu_(h);
    h.mul_(gate_up[1]);
  }
  return project(h, down);
}

namespace {

// dst[:, first .. first + T) = src ([heads, T, hd]) as copy_ would, row by row (a copy is exact
// in any dtype); false (nothing copied) where the layouts are not plain rows or the copy
// is large enough for copy_'s threads.
bool copy_rows(const at::Tensor& dst, int64_t first, const at::Tensor& src) {
  if (!g_small_f32.load(std::memory_order_relaxed) || !dst.device().is_cpu() || !src.device().is_cpu() ||
      src.scalar_type() != dst.scalar_type() || src.dim() != 3 || dst.stride(2) != 1 || src.stride(2) != 1 ||
      src.size(0) != dst.size(0) || src.size(2) != dst.size(2) || src.numel() > kSmallF32Values) {
    return false;
  }
  const int64_t heads = src.size(0), t = src.size(1), hd = src.size(2);
  const size_t bytes = static_cast<size_t>(hd) * src.element_size();
  const char* s = static_cast<const char*>(src.data_ptr());
  char* d = static_cast<char*>(dst.data_ptr());
  const int64_t e = src.element_size();
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t r = 0; r < t; ++r) {
      std::memcpy(d + (h * dst.stride(0) + (first + r) * dst.stride(1)) * e, s + (h * src.stride(0) + r * src.stride(1)) * e,
                  bytes);
    }
  }
  return true;
}

}  // namespace

void KvCache::reserve(int64_t num_kv_heads, int64_t capacity, int64_t head_dim, const at::TensorOptions& options) {
  if (k_.defined() && k_.size(1) >= capacity) return;
  at::Tensor like = at::empty({num_kv_heads, 0, head_dim}, options);
  grow(capacity, like, like);
}

void KvCache::grow(int64_t capacity, const at::Tensor& like_k, const at::Tensor& like_v) {
  at::Tensor nk = at::empty({like_k.size(0), capacity, like_k.size(2)}, like_k.options());
  at::Tensor nv = at::empty({like_v.size(0), capacity, like_v.size(2)}, like_v.options());
  if (length_ > 0) {
    nk.narrow(1, 0, length_).copy_(k_.narrow(1, 0, length_));
    nv.narrow(1, 0, length_).copy_(v_.narrow(1, 0, length_));
  }
  k_ = nk;
  v_ = nv;
}

void KvCache::append(const at::Tensor& k, const at::Tensor& v) {
  const int64_t t = k.size(1);
  const int64_t need = length_ + t;
  if (!k_.defined() || need > k_.size(1)) {
    const int64_t cap = k_.defined() ? k_.size(1) : 0;
    grow(std::max<int64_t>({need, 2 * cap, kMinCacheCapacity}), k, v);
  }
  if (!copy_rows(k_, length_, k) || !copy_rows(v_, length_, v)) {
    k_.narrow(1, length_, t).copy_(k);
    v_.narrow(1, length_, t).copy_(v);
  }
  length_ = need;
}

void KvCache::crop(int64_t length) {
  assert(length >= 0);
  if (length < length_) length_ = length;
}

void KvCache::release() {
  k_ = at::Tensor();
  v_ = at::Tensor();
  length_ = 0;
}

}  // namespace ferry::eval
