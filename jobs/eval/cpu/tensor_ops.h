// The transformer arithmetic shared by the Qwen3 target and the DFlash drafter:
// RMSNorm, rotary embeddings (non-interleaved halves), grouped-query attention written
// with matmul/softmax (libtorch 1.13 has no scaled_dot_product_attention), SwiGLU, and
// a croppable per-layer KV cache. Internal to jobs/eval; callers own every tensor.
// Functions are pure; a KvCache belongs to the model (and thread) that fills it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace ferry::eval {

/// Where and in what precision a model computes; chosen once, at load.
struct ComputeOptions {
  at::ScalarType dtype = at::kFloat;
  at::Device device = at::kCPU;
};

/// Qwen3 RMSNorm over the last dim: normalise in float32, cast back, then scale by w.
/// x: [..., d], weight: [d]
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

/// x + y, the residual stream's add (same shape).
at::Tensor residual_add(const at::Tensor& x, const at::Tensor& y);

/// Small float32 tensors on the CPU (issue 45): up to this many values, rms_norm,
/// norm_rope_heads, residual_add, a 1-row project, swiglu's product and KvCache::append
/// run as plain loops on the tensors' memory instead of one libtorch op per step. Each
/// loop makes exactly the float32 operations libtorch's ops made, in the same order and
/// rounded alike (no fused multiply-adds), and the reductions stay libtorch's (an
/// RMSNorm's mean, softmax) or the same BLAS call (sgemv_), so the values are
/// bit-identical (tests: TensorOpsTest.SmallFloat32*). A forward of a tiny model then
/// makes about a third of the libtorch calls it made.
inline constexpr int64_t kSmallF32Values = 16384;
/// On by default; off: every op goes through libtorch (for benchmarks and tests).
void set_small_f32_enabled(bool enabled);
bool small_f32_enabled();

/// cos/sin tables for the given absolute positions. positions: [T] int64 -> [T, head_dim]
struct RopeTables {
  at::Tensor cos;
  at::Tensor sin;
};
RopeTables rope_tables(int64_t first_position, int64_t count, int64_t head_dim, double theta,
                       const ComputeOptions& options);

/// cos/sin for positions [0, capacity), computed once and narrowed per forward, so a
/// decode step builds no tables; grows (doubling) when asked past its end.
class RopeCache {
 public:
  RopeCache(int64_t head_dim, double theta, const ComputeOptions& options)
      : head_dim_(head_dim), theta_(theta), options_(options) {}
  void reserve(int64_t positions);
  /// Same values as rope_tables(first_position, count, ...).
  RopeTables at(int64_t first_position, int64_t count);

 private:
  int64_t head_dim_;
  double theta_;
  ComputeOptions options_;
  RopeTables table_;
  int64_t capacity_ = 0;
};

/// x: [heads, T, head_dim]; x*cos + rotate_half(x)*sin.
at::Tensor apply_rope(const at::Tensor& x, const RopeTables& rope);
/// A projection's output per head, x: [T, heads, head_dim], normed (q_norm, k_norm) and
/// rotated -> [heads, T, head_dim]: apply_rope(rms_norm(x, w, eps).transpose(0, 1), rope).
at::Tensor norm_rope_heads(const at::Tensor& x, const at::Tensor& weight, double eps, const RopeTables& rope);

/// Grouped-query attention.
/// q: [num_heads, T, hd], k/v: [num_kv_heads, S, hd] -> [T, num_heads * hd].
/// causal_past < 0: no mask (every query sees every key); otherwise query i sits at
/// position causal_past + i and sees keys 0 .. causal_past + i.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t causal_past);
/// The additive mask attention() applies for `causal_past` (T queries over S keys), as
/// float32 [T, S], or an undefined tensor when no key is hidden. Build it once per forward.
at::Tensor causal_mask(int64_t t, int64_t s, int64_t causal_past, const at::Device& device);
/// Multiply-adds of attention: `rows` queries of `heads` heads of `head_dim` over `keys`
/// keys (scores and sums), for the threads a forward gets (compute_threads.h, ThreadsForWork).
inline int64_t attention_macs(int64_t rows, int64_t keys, int64_t heads, int64_t head_dim) {
  return 2 * rows * keys * heads * head_dim;
}
/// attention() with a mask from causal_mask() (undefined: no mask).
at::Tensor attention_with_mask(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask);

/// x @ w^T. x: [T, in], w: [out, in] -> [T, out], or w packed at load
/// (pack_bf16_weight(), WeightLoader::take_linear()): then packed_bf16_linear, any T.
/// Else BF16 with up to kBf16LinearMaxRows rows on an AVX512-BF16 CPU goes through
/// bf16_linear (weights streamed once at the core's read speed); a single float32 row
/// through a matrix-vector product (BLAS gemm would first copy, "pack", all of w); the
/// rest through libtorch's gemm (oneDNN for BF16).
at::Tensor project(const at::Tensor& x, const at::Tensor& w);
/// project(x, w)'s first `columns` outputs: an output head packed with padding
/// (WeightLoader::take_lm_head) has up to 15 more, all zero (a view, not a copy).
at::Tensor project_columns(const at::Tensor& x, const at::Tensor& w, int64_t columns);
/// project(x, w) for each w, the packed ones in one parallel region
/// (packed_bf16_linear_all): q/k/v, or an MLP's gate and up.
std::vector<at::Tensor> project_all(const at::Tensor& x, const std::vector<at::Tensor>& weights);

/// down(silu(gate(x)) * up(x)) with gate and up stacked: gate_up: [2I, H], down: [H, I].
at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate_up, const at::Tensor& down);
/// The same with gate [I, H] and up [I, H] apart (used in place from the checkpoint).
at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate, const at::Tensor& up, const at::Tensor& down);

/// One layer's keys and values, [num_kv_heads, capacity, head_dim], of which the first
/// length() positions are valid. Grows by doubling; crop() only moves the length.
class KvCache {
 public:
  /// Allocates room for `capacity` positions up front, so appends up to it never
  /// reallocate (keeps what is cached).
  void reserve(int64_t num_kv_heads, int64_t capacity, int64_t head_dim, const at::TensorOptions& options);
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
  void grow(int64_t capacity, const at::Tensor& like_k, const at::Tensor& like_v);
  at::Tensor k_;
  at::Tensor v_;
  int64_t length_ = 0;
};

}  // namespace ferry::eval
