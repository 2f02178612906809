// The transformer arithmetic shared by the Qwen3 target and the DFlash drafter:
// RMSNorm, rotary embeddings (non-interleaved halves), grouped-query attention written
// with matmul/softmax (libtorch 1.13 has no scaled_dot_product_attention), SwiGLU, and
// a croppable per-layer KV cache. Internal to jobs/eval; callers own every tensor.
// Functions are pure; a KvCache belongs to the model (and thread) that fills it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace ferry::eval {

/// Where and in what precision a model computes; chosen once, at load.
struct ComputeOptions {
  at::ScalarType dtype = at::kFloat;
  at::Device device = at::kCPU;
};

/// Qwen3 RMSNorm over the last dim: normalise in float32, cast back, then scale by w.
/// x: [..., d], weight: [d]
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

/// cos/sin tables for the given absolute positions. positions: [T] int64 -> [T, head_dim]
struct RopeTables {
  at::Tensor cos;
  at::Tensor sin;
};
RopeTables rope_tables(int64_t first_position, int64_t count, int64_t head_dim, double theta,
                       const ComputeOptions& options);

/// x: [heads, T, head_dim]; x*cos + rotate_half(x)*sin.
at::Tensor apply_rope(const at::Tensor& x, const RopeTables& rope);

/// Grouped-query attention.
/// q: [num_heads, T, hd], k/v: [num_kv_heads, S, hd] -> [T, num_heads * hd].
/// causal_past < 0: no mask (every query sees every key); otherwise query i sits at
/// position causal_past + i and sees keys 0 .. causal_past + i.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t causal_past);
/// The same with an explicit additive float32 mask [T, S] (0 = visible, -inf = hidden;
/// undefined = no mask).
at::Tensor attention_masked(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask);

/// down(silu(gate(x)) * up(x)) with gate and up stacked: gate_up: [2I, H], down: [H, I].
at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate_up, const at::Tensor& down);

/// One layer's keys and values, [num_kv_heads, capacity, head_dim], of which the first
/// length() positions are valid. Grows by doubling; crop() only moves the length.
class KvCache {
 public:
  /// Appends k/v: [num_kv_heads, T, hd] at positions length() .. length()+T-1.
  void append(const at::Tensor& k, const at::Tensor& v);
  /// Views of the valid prefix.
  at::Tensor keys() const { return k_.narrow(1, 0, length_); }
  at::Tensor values() const { return v_.narrow(1, 0, length_); }
  int64_t length() const { return length_; }
  void crop(int64_t length);
  void reset() { length_ = 0; }
  /// Drops the storage too.
  void release();

 private:
  at::Tensor k_;
  at::Tensor v_;
  int64_t length_ = 0;
};

}  // namespace ferry::eval
