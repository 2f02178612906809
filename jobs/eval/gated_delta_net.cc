#include "jobs/eval/gated_delta_net.h"

#include "jobs/eval/avx512_lanes.h"
#include "jobs/eval/bf16_linear.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ferry::eval {
namespace {

// q, k L2 normalisation as the FLA kernel does it (use_qk_l2norm_in_kernel).
constexpr double kL2NormEps = 1e-6;

at::Tensor l2_normalize(const at::Tensor& x) { return x * at::rsqrt(x.pow(2).sum(-1, /*keepdim=*/true) + kL2NormEps); }

}  // namespace

GdnState gdn_initial_state(const GdnDims& d, const at::Device& device) {
  auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  GdnState s;
  s.conv = at::zeros({d.conv_kernel - 1, d.conv_channels()}, f32);
  s.state = at::zeros({d.value_heads, d.key_dim, d.value_dim}, f32);
  return s;
}

namespace {

// State multiply-adds a thread takes at a time (whole heads). for_each_chunk splits a
// call only where each thread gets two such chunks: a small one runs on the calling
// thread (a parallel region waits for every thread; on a busy host, a time slice).
constexpr int64_t kParallelStateWork = int64_t{1} << 20;

// One head's steps, 16 value lanes at a time (dv a multiple of 16; blocks of up to
// kBlockVectors vectors keep their sums in registers across the dk keys). Each lane
// adds in the scalar loop's order, with fused multiply-adds. Several times the scalar
// loop's speed, which the build compiles for baseline x86-64: the recurrence was ~15 %
// of a 27B-shaped verify. Reached where bf16_kernel_supported() (compiled with the
// shared AVX-512 target, which names AVX512-BF16), else the scalar loop runs.
constexpr int64_t kBlockVectors = 8;

FERRY_AVX512_LANES void delta_rule_head_avx512(const float* q, const float* k, const float* v, const float* decay,
                                               const float* beta, const float* from, float* s, float* out,
                                               int64_t t_len, int64_t hv, int64_t h, int64_t dk, int64_t dv) {
  for (int64_t t = 0; t < t_len; ++t) {
    const float* kt = k + (t * hv + h) * dk;
    const float* vt = v + (t * hv + h) * dv;
    const float* qt = q != nullptr ? q + (t * hv + h) * dk : nullptr;
    float* o = out != nullptr && qt != nullptr ? out + (t * hv + h) * dv : nullptr;
    const __m512 d = _mm512_set1_ps(decay[t * hv + h]), b = _mm512_set1_ps(beta[t * hv + h]);
    for (int64_t j0 = 0; j0 < dv; j0 += 16 * kBlockVectors) {
      const int64_t nv = std::min<int64_t>(kBlockVectors, (dv - j0) / 16);
      // Sᵀk of the undecayed state, then delta = beta (v - decay Sᵀk).
      __m512 delta[kBlockVectors];
      for (int64_t n = 0; n < nv; ++n) delta[n] = _mm512_setzero_ps();
      for (int64_t i = 0; i < dk; ++i) {
        const __m512 ki = _mm512_set1_ps(kt[i]);
        const float* row = from + i * dv + j0;
#pragma GCC unroll 8
        for (int64_t n = 0; n < nv; ++n) delta[n] = _mm512_fmadd_ps(_mm512_loadu_ps(row + 16 * n), ki, delta[n]);
      }
      for (int64_t n = 0; n < nv; ++n) {
        delta[n] = _mm512_mul_ps(b, _mm512_sub_ps(_mm512_loadu_ps(vt + j0 + 16 * n), _mm512_mul_ps(d, delta[n])));
      }
      // S = decay S + k ⊗ delta, and the output Sᵀq of the new state (a replay has no q:
      // its sums are zeros, never stored; the loop is bound by reading S, not by them).
      __m512 acc[kBlockVectors];
      for (int64_t n = 0; n < nv; ++n) acc[n] = _mm512_setzero_ps();
      for (int64_t i = 0; i < dk; ++i) {
        const __m512 ki = _mm512_set1_ps(kt[i]);
        const __m512 qi = _mm512_set1_ps(qt != nullptr ? qt[i] : 0.0f);
        const float* src = from + i * dv + j0;
        float* dst = s + i * dv + j0;
#pragma GCC unroll 8
        for (int64_t n = 0; n < nv; ++n) {
          const __m512 x = _mm512_fmadd_ps(d, _mm512_loadu_ps(src + 16 * n), _mm512_mul_ps(ki, delta[n]));
          _mm512_storeu_ps(dst + 16 * n, x);
          acc[n] = _mm512_fmadd_ps(x, qi, acc[n]);
        }
      }
      if (o != nullptr) {
        for (int64_t n = 0; n < nv; ++n) _mm512_storeu_ps(o + j0 + 16 * n, acc[n]);
      }
    }
    from = s;
  }
}

// The recurrence on CPU float32, one head at a time: per step it reads S once for Sᵀk
// and once more to decay, write and read the output, where the ATen form makes ~5
// passes of small ops whose thread-pool wake-ups dominate on a busy box. Heads are
// independent, so large ones (Qwen3.6-27B: 48 heads of 128 x 128 per GDN layer) are
// split over the intra-op threads; each head's state stays in one core's cache.
void delta_rule_cpu(const float* q, const float* k, const float* v, const float* decay, const float* beta,
                    const float* initial, float* state, float* out, int64_t t_len, int64_t hv, int64_t dk, int64_t dv) {
  const int64_t per_head = std::max<int64_t>(1, t_len * dk * dv);
  const int64_t heads_per_chunk = std::max<int64_t>(1, kParallelStateWork / per_head);
  const bool vectors = dv % 16 == 0 && bf16_kernel_supported();
  // On the eval's own threads, like the projections around it (compute_threads.h).
  for_each_chunk((hv + heads_per_chunk - 1) / heads_per_chunk, [&](int64_t chunk) {
    const int64_t first = chunk * heads_per_chunk, end = std::min(hv, first + heads_per_chunk);
    const size_t scratch = vectors ? 0 : static_cast<size_t>(dv);  // the scalar loop's
    std::vector<float> kv(scratch), delta(scratch);
    for (int64_t h = first; h < end; ++h) {
      float* s = state + h * dk * dv;
      const float* from = initial + h * dk * dv;  // first step reads the snapshot
      if (t_len == 0) {
        std::copy(from, from + dk * dv, s);
        continue;
      }
      if (vectors) {
        delta_rule_head_avx512(q, k, v, decay, beta, from, s, out, t_len, hv, h, dk, dv);
        continue;
      }
      for (int64_t t = 0; t < t_len; ++t) {
        const float* kt = k + (t * hv + h) * dk;
        const float* vt = v + (t * hv + h) * dv;
        const float d = decay[t * hv + h], b = beta[t * hv + h];
        std::fill(kv.begin(), kv.end(), 0.0f);
        for (int64_t i = 0; i < dk; ++i) {
          const float ki = kt[i];
          const float* row = from + i * dv;
          for (int64_t j = 0; j < dv; ++j) kv[static_cast<size_t>(j)] += row[j] * ki;
        }
        for (int64_t j = 0; j < dv; ++j) {
          delta[static_cast<size_t>(j)] = b * (vt[j] - d * kv[static_cast<size_t>(j)]);
        }
        float* o = out != nullptr ? out + (t * hv + h) * dv : nullptr;
        if (o != nullptr) std::fill(o, o + dv, 0.0f);
        const float* qt = q != nullptr ? q + (t * hv + h) * dk : nullptr;
        for (int64_t i = 0; i < dk; ++i) {
          const float ki = kt[i];
          const float* src = from + i * dv;
          float* dst = s + i * dv;
          for (int64_t j = 0; j < dv; ++j) dst[j] = d * src[j] + ki * delta[static_cast<size_t>(j)];
          if (o != nullptr) {
            const float qi = qt[i];
            for (int64_t j = 0; j < dv; ++j) o[j] += dst[j] * qi;
          }
        }
        from = s;
      }
    }
  });
}

}  // namespace

at::Tensor gated_delta_rule(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& decay,
                            const at::Tensor& beta, const at::Tensor& initial, at::Tensor* final_state) {
  const int64_t t_len = k.size(0), hv = k.size(1), dk = k.size(2), dv = v.size(2);
  at::Tensor out;
  if (q.defined()) out = at::empty({t_len, hv, dv}, v.options());
  if (initial.device().is_cpu()) {
    at::Tensor kc = k.contiguous(), vc = v.contiguous(), dc = decay.contiguous(), bc = beta.contiguous();
    at::Tensor qc = q.defined() ? q.contiguous() : q;
    at::Tensor init = initial.contiguous();
    at::Tensor s = at::empty_like(init);  // never `initial`: that stays the rollback snapshot
    delta_rule_cpu(qc.defined() ? qc.data_ptr<float>() : nullptr, kc.data_ptr<float>(), vc.data_ptr<float>(),
                   dc.data_ptr<float>(), bc.data_ptr<float>(), init.data_ptr<float>(), s.data_ptr<float>(),
                   out.defined() ? out.data_ptr<float>() : nullptr, t_len, hv, dk, dv);
    *final_state = s;
    return out;
  }
  return gated_delta_rule_generic(q, k, v, decay, beta, initial, final_state);
}

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
  at::Tensor qkv = in[0].to(at::kFloat);  // [T, C]
  at::Tensor z = in[1].view({t_len, d.value_heads, d.value_dim});
  at::Tensor b = in[2].to(at::kFloat);  // [T, Hv]
  at::Tensor a = in[3].to(at::kFloat);  // [T, Hv]

  // Causal depthwise conv: output t sees window rows t .. t+K-1 (the last one is token t).
  at::Tensor window = at::cat({st->conv, qkv}, 0);  // [K-1+T, C]
  at::Tensor conv = window.narrow(0, 0, t_len) * w.conv[0];
  for (int64_t j = 1; j < d.conv_kernel; ++j) conv.addcmul_(window.narrow(0, j, t_len), w.conv[j]);
  conv = at::silu(conv);

  at::Tensor q = l2_normalize(conv.narrow(1, 0, kd).view({t_len, d.key_heads, d.key_dim})) *
                 (1.0 / std::sqrt(static_cast<double>(d.key_dim)));
  at::Tensor k = l2_normalize(conv.narrow(1, kd, kd).view({t_len, d.key_heads, d.key_dim}));
  at::Tensor v = conv.narrow(1, 2 * kd, vd).reshape({t_len, d.value_heads, d.value_dim});
  if (rep > 1) {
    q = q.repeat_interleave(rep, 1);
    k = k.repeat_interleave(rep, 1);
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
