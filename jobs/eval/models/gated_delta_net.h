// Gated DeltaNet: the linear-attention layer of Qwen3.5/3.6 (Hugging Face
// `Qwen3_5GatedDeltaNet`), with its carried state and the rollback a speculative
// verify needs.
//
// Forward over T tokens: the four projections run batched over all T rows; a causal
// depthwise conv (no bias) + SiLU over the q|k|v channels only; q, k L2-normalised in
// float32 and q scaled by d_k^-1/2; value head h reads q/k head h / (Hv/Hk);
// β = sigmoid(b), decay = exp(g) with g = -exp(A_log)·softplus(a + dt_bias); then the
// gated delta rule per token on a float32 state S [Hv, d_k, d_v]:
//   S ← decay·S;  S ← S + k (β (v − Sᵀk))ᵀ;  o = Sᵀq
// and the gated RMSNorm (plain w) × silu(z) before out_proj.
//
// Rollback (snapshot + replay): the recurrence never writes into the state it started
// from, so keeping that tensor is a free snapshot; with the last forward's k, v, decay,
// β and conv window kept too, rollback(n) rebuilds "after the first n tokens" by
// replaying n rank-1 steps (no projection or conv is recomputed).
// Plain data + functions; the owner (Qwen35Target) serialises access.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "jobs/eval/cpu/tensor_ops.h"

namespace ferry::eval {

struct GdnDims {
  int64_t hidden = 0;
  int64_t key_heads = 0;    // Hk
  int64_t value_heads = 0;  // Hv, a multiple of Hk
  int64_t key_dim = 0;      // d_k
  int64_t value_dim = 0;    // d_v
  int64_t conv_kernel = 4;  // K
  double eps = 1e-6;
  int64_t conv_channels() const { return 2 * key_heads * key_dim + value_heads * value_dim; }
};

struct GdnWeights {
  at::Tensor in_qkv;    // [conv_channels, hidden]
  at::Tensor in_z;      // [Hv*d_v, hidden]
  at::Tensor in_b;      // [Hv, hidden]
  at::Tensor in_a;      // [Hv, hidden]
  at::Tensor conv;      // [K, conv_channels] float32 (the checkpoint's [C, 1, K], transposed)
  at::Tensor neg_a;     // [Hv] float32: -exp(A_log)
  at::Tensor dt_bias;   // [Hv] float32
  at::Tensor norm;      // [d_v] (plain w)
  at::Tensor out;       // [hidden, Hv*d_v]
};

struct GdnState {
  at::Tensor conv;   // [K-1, conv_channels] float32: the last pre-conv rows
  at::Tensor state;  // [Hv, d_k, d_v] float32
  // The last forward's tape, for rollback.
  at::Tensor state_before;        // S before it (never written to)
  at::Tensor window;              // [K-1+T, conv_channels]: conv state then the T new rows
  at::Tensor k, v, decay, beta;   // [T, Hv, d_k], [T, Hv, d_v], [T, Hv], [T, Hv] float32
  int64_t tape_tokens = 0;
};

/// Zero state (sequence start).
GdnState gdn_initial_state(const GdnDims& dims, const at::Device& device);

/// x: [T, hidden] (already input-normed) -> [T, hidden] in x's dtype; advances *state
/// by T tokens and records the tape.
at::Tensor gdn_forward(const GdnDims& dims, const GdnWeights& w, const at::Tensor& x, GdnState* state);

/// Sets the state to "after the first `keep` tokens of the last forward", 0 <= keep <= T.
void gdn_rollback(GdnState* state, int64_t keep);

/// The gated delta rule over T steps from `initial` (not modified). q may be undefined
/// (no outputs wanted). Returns o [T, Hv, d_v] (undefined without q); *final gets S_T.
at::Tensor gated_delta_rule(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& decay,
                            const at::Tensor& beta, const at::Tensor& initial, at::Tensor* final_state);
/// From this many tokens with outputs wanted (a prefill), gated_delta_rule runs the
/// chunked form when it is switched on (set_gdn_chunked_enabled): per chunk, batched
/// matrix products instead of one rank-1 step a token.
constexpr int64_t kGdnChunkedMinTokens = 64;

/// The gated delta rule in chunks of `chunk` tokens (the WY form of flash-linear-
/// attention's chunk_gated_delta_rule, as the model's own training code computes it):
/// within a chunk the deltas solve one unit lower-triangular system, and the outputs and
/// the state come from matrix products, in float32 with the decays' cumulative logs in
/// float64. q must be defined. The same results as the step-by-step rule within float32
/// rounding (tests/eval/models/qwen35_target_test.cc).
at::Tensor gated_delta_rule_chunked(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    const at::Tensor& decay, const at::Tensor& beta, const at::Tensor& initial,
                                    at::Tensor* final_state, int64_t chunk = 64);

/// Whether gated_delta_rule takes the chunked form for long inputs. Off: on the CPUs
/// measured, the AVX-512 step loop (cpu/gdn_recurrence.h) is as fast or faster at the
/// hybrid's head shape (tests/bench/qwen35_slice_bench --compare-gdn; docs/benchmarks.md).
constexpr bool kGdnChunkedByDefault = false;

/// Process-wide switch (kGdnChunkedByDefault at start) so a benchmark can time the
/// step-by-step prefill beside the chunked one in one run.
void set_gdn_chunked_enabled(bool enabled);

/// The same in ATen ops on any device (what runs off the CPU; on the CPU,
/// gated_delta_rule runs cpu/gdn_recurrence.h). Tests check the two agree.
at::Tensor gated_delta_rule_generic(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    const at::Tensor& decay, const at::Tensor& beta, const at::Tensor& initial,
                                    at::Tensor* final_state);

}  // namespace ferry::eval
