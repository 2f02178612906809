#include "jobs/eval/cpu/tensor_ops.h"

#include "jobs/eval/cpu/bf16_attention.h"
#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/bf16_norm_rope.h"
#include "jobs/eval/cpu/bf16_silu_mul.h"
#include "jobs/eval/cpu/packed_bf16_linear.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace ferry::eval {
namespace {

// Smallest KV capacity allocated; later growth doubles.
constexpr int64_t kMinCacheCapacity = 256;

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (bf16_rms_norm_applies(x, weight)) return bf16_rms_norm(x, weight, eps);
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
  at::Tensor scores = at::bmm(qg, k.transpose(1, 2)) * (1.0 / std::sqrt(static_cast<double>(hd)));
  at::Tensor scores32 = scores.to(at::kFloat);
  if (mask.defined()) scores32 = (scores32.view({num_kv, rep, t, s}) + mask).view({num_kv, rep * t, s});
  at::Tensor probs = at::softmax(scores32, -1).to(q.scalar_type());
  at::Tensor out = at::bmm(probs, v);  // [num_kv, rep*t, hd]
  return out.view({num_heads, t, hd}).transpose(0, 1).reshape({t, num_heads * hd});
}

at::Tensor project(const at::Tensor& x, const at::Tensor& w) {
  if (is_packed_bf16_weight(w)) return packed_bf16_linear(x, w);
  if (bf16_linear_applies(x, w)) return bf16_linear(x, w);
  if (w.device().is_cpu() && x.size(0) == 1 && x.scalar_type() == at::kFloat) {
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
  } else {
    at::silu_(h);
    h.mul_(gate_up[1]);
  }
  return project(h, down);
}

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
  k_.narrow(1, length_, t).copy_(k);
  v_.narrow(1, length_, t).copy_(v);
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
