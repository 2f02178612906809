#include "jobs/eval/models/gated_delta_net.h"

#include "jobs/eval/cpu/gdn_conv_qk.h"
#include "jobs/eval/cpu/gdn_recurrence.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

namespace ferry::eval {
namespace {

// q, k L2 normalisation as the FLA kernel does it (use_qk_l2norm_in_kernel).
constexpr double kL2NormEps = 1e-6;

at::Tensor l2_normalize(const at::Tensor& x) { return x * at::rsqrt(x.pow(2).sum(-1, /*keepdim=*/true) + kL2NormEps); }

std::atomic<bool> g_chunked{kGdnChunkedByDefault};

}  // namespace

GdnState gdn_initial_state(const GdnDims& d, const at::Device& device) {
  auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  GdnState s;
  s.conv = at::zeros({d.conv_kernel - 1, d.conv_channels()}, f32);
  s.state = at::zeros({d.value_heads, d.key_dim, d.value_dim}, f32);
  return s;
}

at::Tensor gated_delta_rule(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& decay,
                            const at::Tensor& beta, const at::Tensor& initial, at::Tensor* final_state) {
  const int64_t t_len = k.size(0), hv = k.size(1), dk = k.size(2), dv = v.size(2);
  if (q.defined() && t_len >= kGdnChunkedMinTokens && g_chunked.load(std::memory_order_relaxed)) {
    return gated_delta_rule_chunked(q, k, v, decay, beta, initial, final_state);
  }
  at::Tensor out;
  if (q.defined()) out = at::empty({t_len, hv, dv}, v.options());
  if (initial.device().is_cpu()) {
    at::Tensor kc = k.contiguous(), vc = v.contiguous(), dc = decay.contiguous(), bc = beta.contiguous();
    at::Tensor qc = q.defined() ? q.contiguous() : q;
    at::Tensor init = initial.contiguous();
    at::Tensor s = at::empty_like(init);  // never `initial`: that stays the rollback snapshot
    gdn_recurrence_cpu(qc.defined() ? qc.data_ptr<float>() : nullptr, kc.data_ptr<float>(), vc.data_ptr<float>(),
                       dc.data_ptr<float>(), bc.data_ptr<float>(), init.data_ptr<float>(), s.data_ptr<float>(),
                       out.defined() ? out.data_ptr<float>() : nullptr, t_len, hv, dk, dv);
    *final_state = s;
    return out;
  }
  return gated_delta_rule_generic(q, k, v, decay, beta, initial, final_state);
}

at::Tensor gated_delta_rule_chunked(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    const at::Tensor& decay, const at::Tensor& beta, const at::Tensor& initial,
                                    at::Tensor* final_state, int64_t chunk) {
  const int64_t t_len = k.size(0), dv = v.size(2);
  // Heads first: [H, T, d], so each chunk is a batch of small matrix products.
  const at::Tensor qh = q.permute({1, 0, 2}).contiguous(), kh = k.permute({1, 0, 2}).contiguous();
  const at::Tensor vh = v.permute({1, 0, 2}).contiguous(), bh = beta.t().contiguous();
  // log decay in float64 for the cumulative sums; a decay that underflowed to 0 counts
  // as e^-80 (the state it leaves is below float32's resolution either way).
  const at::Tensor logd = at::log(decay.t().to(at::kDouble)).clamp_min(-80.0);
  at::Tensor s = initial.clone();  // [H, dk, dv]; `initial` stays the rollback snapshot
  at::Tensor out = at::empty({v.size(1), t_len, dv}, v.options());
  for (int64_t start = 0; start < t_len; start += chunk) {
    const int64_t c = std::min(chunk, t_len - start);
    const at::Tensor kc = kh.narrow(1, start, c), qc = qh.narrow(1, start, c), vc = vh.narrow(1, start, c);
    const at::Tensor bc = bh.narrow(1, start, c).unsqueeze(-1);      // [H, C, 1]
    const at::Tensor lc = logd.narrow(1, start, c).cumsum(1);        // [H, C], log γ_t
    const at::Tensor gamma = lc.exp().to(at::kFloat).unsqueeze(-1);  // [H, C, 1]
    // R[t, j] = γ_t / γ_j for j <= t (the decay from step j to step t), else 0.
    const at::Tensor above = at::ones({c, c}, lc.options().dtype(at::kBool)).triu(1);
    const at::Tensor r = (lc.unsqueeze(-1) - lc.unsqueeze(-2)).masked_fill(above, -INFINITY).exp().to(at::kFloat);
    // The deltas u_t = β_t (v_t - γ_t S0ᵀk_t - Σ_{j<t} R[t,j] (k_t·k_j) u_j) solve
    // (I + A) U = β V - β γ K S0, A strictly lower: A[t,j] = β_t R[t,j] k_t·k_j.
    const at::Tensor a = (bc * r * at::bmm(kc, kc.transpose(1, 2))).tril(-1);
    const at::Tensor eye = at::eye(c, a.options());
    const at::Tensor rhs = at::cat({bc * vc, bc * gamma * kc}, 2);  // [H, C, dv + dk]
    const at::Tensor x = at::linalg_solve_triangular(eye + a, rhs, /*upper=*/false, /*left=*/true,
                                                     /*unitriangular=*/true);
    const at::Tensor u = x.narrow(2, 0, dv) - at::bmm(x.narrow(2, dv, x.size(2) - dv), s);  // [H, C, dv]
    // o_t = γ_t S0ᵀq_t + Σ_{j<=t} R[t,j] (q_t·k_j) u_j.
    out.narrow(1, start, c).copy_(at::bmm(gamma * qc, s) + at::bmm(r * at::bmm(qc, kc.transpose(1, 2)), u));
    // S_C = γ_C S0 + Σ_j (γ_C / γ_j) k_j u_jᵀ.
    const at::Tensor last = lc.narrow(1, c - 1, 1);                            // [H, 1]
    const at::Tensor to_end = (last - lc).exp().to(at::kFloat).unsqueeze(-1);  // [H, C, 1]
    s = s * last.exp().to(at::kFloat).unsqueeze(-1) + at::bmm(kc.transpose(1, 2), to_end * u);
  }
  *final_state = s;
  return out.permute({1, 0, 2}).contiguous();
}

void set_gdn_chunked_enabled(bool enabled) { g_chunked.store(enabled, std::memory_order_relaxed); }

at::Tensor gated_delta_rule_generic(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                    const at::Tensor& decay, const at::Tensor& beta, const at::Tensor& initial,
                                    at::Tensor* final_state) {
  const int64_t t_len = k.size(0), hv = k.size(1), dk = k.size(2), dv = v.size(2);
  at::Tensor out;
  if (q.defined()) out = at::empty({t_len, hv, dv}, v.options());
  at::Tensor s = initial;
  for (int64_t t = 0; t < t_len; ++t) {
    at::Tensor kt = k[t].view({hv, 1, dk});
    at::Tensor d = decay[t].view({hv, 1, 1});
    // Sᵀk of the decayed state, read from the undecayed one and scaled after.
    at::Tensor kv = at::bmm(kt, s).view({hv, dv}) * decay[t].view({hv, 1});
    at::Tensor delta = (v[t] - kv) * beta[t].view({hv, 1});
    // The first step allocates, so `initial` stays intact (the rollback snapshot).
    if (t == 0) {
      s = s * d;
    } else {
      s.mul_(d);
    }
    s.baddbmm_(kt.transpose(1, 2), delta.view({hv, 1, dv}));
    if (q.defined()) out[t].copy_(at::bmm(q[t].view({hv, 1, dk}), s).view({hv, dv}));
  }
  *final_state = s;
  return out;
}

at::Tensor gdn_forward(const GdnDims& d, const GdnWeights& w, const at::Tensor& x, GdnState* st) {
  const int64_t t_len = x.size(0);
  const int64_t kd = d.key_heads * d.key_dim, vd = d.value_heads * d.value_dim;
  const int64_t k_minus_1 = d.conv_kernel - 1;
  const int64_t rep = d.value_heads / d.key_heads;

  std::vector<at::Tensor> in = project_all(x, {w.in_qkv, w.in_z, w.in_b, w.in_a});
  at::Tensor z = in[1].view({t_len, d.value_heads, d.value_dim});
  at::Tensor b = in[2].to(at::kFloat);  // [T, Hv]
  at::Tensor a = in[3].to(at::kFloat);  // [T, Hv]

  at::Tensor window, q, k, v;
  if (gdn_conv_qk_small_f32_applies(in[0], st->conv, w.conv)) {
    // A decode step's few thousand values: loops, libtorch's values (cpu/gdn_conv_qk.h).
    GdnConvQk c = gdn_conv_qk_small_f32({d.key_heads, d.key_dim, d.value_heads, d.value_dim, kL2NormEps}, in[0],
                                        st->conv, w.conv);
    window = c.window;
    q = c.q;
    k = c.k;
    v = c.v;
  } else {
    // Causal depthwise conv: output t sees window rows t .. t+K-1 (the last one is token t).
    window = at::cat({st->conv, in[0].to(at::kFloat)}, 0);  // [K-1+T, C]
    at::Tensor conv = window.narrow(0, 0, t_len) * w.conv[0];
    for (int64_t j = 1; j < d.conv_kernel; ++j) conv.addcmul_(window.narrow(0, j, t_len), w.conv[j]);
    conv = at::silu(conv);

    q = l2_normalize(conv.narrow(1, 0, kd).view({t_len, d.key_heads, d.key_dim})) *
        (1.0 / std::sqrt(static_cast<double>(d.key_dim)));
    k = l2_normalize(conv.narrow(1, kd, kd).view({t_len, d.key_heads, d.key_dim}));
    v = conv.narrow(1, 2 * kd, vd).reshape({t_len, d.value_heads, d.value_dim});
    if (rep > 1) {
      q = q.repeat_interleave(rep, 1);
      k = k.repeat_interleave(rep, 1);
    }
  }
  at::Tensor beta = at::sigmoid(b);
  at::Tensor decay = at::exp(w.neg_a * at::softplus(a + w.dt_bias));

  st->state_before = st->state;
  st->window = window;
  st->k = k;
  st->v = v;
  st->decay = decay;
  st->beta = beta;
  st->tape_tokens = t_len;
  at::Tensor o = gated_delta_rule(q, k, v, decay, beta, st->state_before, &st->state);
  st->conv = window.narrow(0, t_len, k_minus_1);

  // Gated RMSNorm per head: w · rmsnorm(o) in the model dtype, times silu(z) in float32.
  at::Tensor normed = rms_norm(o.to(x.scalar_type()), w.norm, d.eps);
  at::Tensor gated = (normed.to(at::kFloat) * at::silu(z.to(at::kFloat))).to(x.scalar_type());
  return project(gated.view({t_len, vd}), w.out);
}

void gdn_rollback(GdnState* st, int64_t keep) {
  TORCH_CHECK(keep >= 0 && keep <= st->tape_tokens, "GDN rollback to ", keep, " of ", st->tape_tokens, " tokens");
  if (keep == 0) {
    st->state = st->state_before;  // no step to replay; nothing writes a state in place
  } else {
    gated_delta_rule(at::Tensor(), st->k.narrow(0, 0, keep), st->v.narrow(0, 0, keep), st->decay.narrow(0, 0, keep),
                     st->beta.narrow(0, 0, keep), st->state_before, &st->state);
  }
  const int64_t k_minus_1 = st->window.size(0) - st->tape_tokens;
  st->conv = st->window.narrow(0, keep, k_minus_1);
}

}  // namespace ferry::eval
