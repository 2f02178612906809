#include "jobs/eval/tensor_ops.h"

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

at::Tensor apply_rope(const at::Tensor& x, const RopeTables& rope) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor x1 = x.narrow(-1, 0, half);
  at::Tensor x2 = x.narrow(-1, half, half);
  at::Tensor rotated = at::cat({-x2, x1}, -1);
  return x * rope.cos + rotated * rope.sin;
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t causal_past) {
  const int64_t t = q.size(1);
  const int64_t s = k.size(1);
  at::Tensor mask;
  if (causal_past >= 0 && (t > 1 || causal_past + t < s)) {
    mask = at::full({t, s}, -std::numeric_limits<float>::infinity(),
                    at::TensorOptions().dtype(at::kFloat).device(q.device()))
               .triu(causal_past + 1);
  }
  return attention_masked(q, k, v, mask);
}

at::Tensor attention_masked(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
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

at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate_up, const at::Tensor& down) {
  at::Tensor gu = at::linear(x, gate_up);
  const int64_t inter = gu.size(-1) / 2;
  return at::linear(at::silu(gu.narrow(-1, 0, inter)) * gu.narrow(-1, inter, inter), down);
}

void KvCache::append(const at::Tensor& k, const at::Tensor& v) {
  const int64_t t = k.size(1);
  const int64_t need = length_ + t;
  if (!k_.defined() || need > k_.size(1)) {
    int64_t cap = k_.defined() ? k_.size(1) : 0;
    cap = std::max<int64_t>({need, 2 * cap, kMinCacheCapacity});
    at::Tensor nk = at::empty({k.size(0), cap, k.size(2)}, k.options());
    at::Tensor nv = at::empty({v.size(0), cap, v.size(2)}, v.options());
    if (length_ > 0) {
      nk.narrow(1, 0, length_).copy_(k_.narrow(1, 0, length_));
      nv.narrow(1, 0, length_).copy_(v_.narrow(1, 0, length_));
    }
    k_ = nk;
    v_ = nv;
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
