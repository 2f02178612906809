#include "jobs/eval/cpu/bf16_attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "jobs/eval/cpu/avx512_lanes.h"
#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/compute_threads.h"
#include "jobs/eval/cpu/packed_bf16_linear.h"

namespace ferry::eval {
namespace {

using bf16 = c10::BFloat16;

// Work (query rows × keys × kv heads; ~15 ns each at head size 128) under which one
// thread does it all: ~0.1 ms. The eval's regions start in a few microseconds while its
// threads spin between them (compute_threads.h), so a verify's attention (16 rows, from
// ~30 keys) is split; a decode step's (one row) only past ~500 keys.
constexpr int64_t kMinParallelWork = 8192;
// Query rows of a kv head (heads per kv head × T, T > 1) from which both of its products
// run on packed tiles (group_scores, pack_group_values): a verify's and a prefill
// chunk's. A decode step (T = 1, whatever the heads per kv head) keeps the dot products:
// it would pack every key and value to use each for a handful of rows, every step.
constexpr int64_t kMinTiledRows = 8;
// Rows whose scores are computed at a time on that path: a prefill chunk's rows ×
// keys at once would hold tens of MB a thread at long contexts.
constexpr int64_t kScoreRows = 64;

struct Shape {
  int64_t t, s, hd, rep;
  float scale;
  const bf16 *q, *k, *v;
  int64_t q_head, q_row, k_head, k_row, v_head, v_row;  // strides in elements
  const float* mask;                                     // [T, S] or null
  bf16* out;                                             // [T, nh * hd]
  int64_t out_row;                                       // nh * hd
};

// dst[0, 16 NV) = sum over keys j of p[j] · v[j][0, 16 NV), in float32, rounded once.
template <int NV>
FERRY_AVX512_BF16 void weighted_sum(const float* p, int64_t s_len, const bf16* v, int64_t v_row, bf16* dst) {
  __m512 acc[NV];
#pragma GCC unroll 8
  for (int n = 0; n < NV; ++n) acc[n] = _mm512_setzero_ps();
  for (int64_t j = 0; j < s_len; ++j) {
    if (p[j] == 0.0f) continue;  // adds nothing (a hidden key, or one rounded away)
    const __m512 w = _mm512_set1_ps(p[j]);
    const bf16* vr = v + j * v_row;
#pragma GCC unroll 8
    for (int n = 0; n < NV; ++n) acc[n] = _mm512_fmadd_ps(w, load_bf16x16(vr + 16 * n), acc[n]);
  }
#pragma GCC unroll 8
  for (int n = 0; n < NV; ++n) {
    store_bf16x16(dst + 16 * n, acc[n]);
  }
}

// The same for two rows of probabilities at once: each value vector widened once feeds
// both rows' sums (the widening was a third of the single row's work).
template <int NV>
FERRY_AVX512_BF16 void weighted_sum2(const float* p0, const float* p1, int64_t s_len, const bf16* v, int64_t v_row,
                                      bf16* dst0, bf16* dst1) {
  __m512 a0[NV], a1[NV];
#pragma GCC unroll 8
  for (int n = 0; n < NV; ++n) a0[n] = a1[n] = _mm512_setzero_ps();
  for (int64_t j = 0; j < s_len; ++j) {
    if (p0[j] == 0.0f && p1[j] == 0.0f) continue;
    const __m512 w0 = _mm512_set1_ps(p0[j]), w1 = _mm512_set1_ps(p1[j]);
    const bf16* vr = v + j * v_row;
#pragma GCC unroll 8
    for (int n = 0; n < NV; ++n) {
      const __m512 x = load_bf16x16(vr + 16 * n);
      a0[n] = _mm512_fmadd_ps(w0, x, a0[n]);
      a1[n] = _mm512_fmadd_ps(w1, x, a1[n]);
    }
  }
#pragma GCC unroll 8
  for (int n = 0; n < NV; ++n) {
    store_bf16x16(dst0 + 16 * n, a0[n]);
    store_bf16x16(dst1 + 16 * n, a1[n]);
  }
}

// Kv head g's keys packed 16 to a panel (the keys are a panel's columns), the last
// panel padded with zero keys, for group_scores.
FERRY_AVX512_BF16 void pack_group_keys(const Shape& a, int64_t g, std::vector<bf16>* keys) {
  const int64_t hd = a.hd, panels = (a.s + kBf16PanelColumns - 1) / kBf16PanelColumns;
  thread_local std::vector<bf16> padded;
  keys->resize(static_cast<size_t>(panels * kBf16PanelColumns * hd));
  const bf16* kg = a.k + g * a.k_head;
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t first = p * kBf16PanelColumns, count = std::min(kBf16PanelColumns, a.s - first);
    const bf16* src = kg + first * a.k_row;
    int64_t stride = a.k_row;
    if (count < kBf16PanelColumns) {
      padded.assign(static_cast<size_t>(kBf16PanelColumns * hd), bf16(0.0f));
      for (int64_t k = 0; k < count; ++k) std::copy(src + k * a.k_row, src + k * a.k_row + hd, &padded[k * hd]);
      src = padded.data();
      stride = hd;
    }
    bf16_interleave_rows(src, kBf16PanelColumns, stride, hd / 2, keys->data() + p * kBf16PanelColumns * hd);
  }
}

// The 16 BF16 values at p, each in the low half of a 32-bit lane.
FERRY_AVX512_BF16 inline __m512i widened(const bf16* p) {
  return _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Kv head g's values as panels for the probabilities × values product: 16 value
// columns to a panel, for each pair of keys (2j, 2j + 1) the two keys' values of each
// column side by side; an odd key count gets a zero key.
FERRY_AVX512_BF16 void pack_group_values(const Shape& a, int64_t g, std::vector<bf16>* values) {
  const int64_t hd = a.hd, key_pairs = (a.s + 1) / 2, panels = hd / kBf16PanelColumns;
  values->resize(static_cast<size_t>(panels * key_pairs * 2 * kBf16PanelColumns));
  const bf16* vg = a.v + g * a.v_head;
  auto* out = reinterpret_cast<__m512i*>(values->data());
  for (int64_t j = 0; j < key_pairs; ++j) {
    const bf16* even = vg + 2 * j * a.v_row;
    const bool has_odd = 2 * j + 1 < a.s;
    for (int64_t c = 0; c < panels; ++c) {
      const __m512i lo = widened(even + 16 * c);
      const __m512i hi = has_odd ? widened(even + a.v_row + 16 * c) : _mm512_setzero_si512();
      _mm512_storeu_si512(out + c * key_pairs + j, _mm512_or_si512(lo, _mm512_maskz_slli_epi32(0xFFFF, hi, 16)));
    }
  }
}

// The scores of kv head g's query rows [r0, r0 + count) (row r: head g rep + r / T,
// position r % T) against its packed keys, as the packed projections run: the rows 16
// at a time through the tile, into scores[(r - r0) * ldo + s] (BF16, each row's dot
// products rounded once; ldo = the keys rounded up to 16). One dot product per
// (row, key) with a sum across lanes had cost twice its multiply-adds.
FERRY_AVX512_BF16 void group_scores(const Shape& a, int64_t g, const std::vector<bf16>& keys, int64_t r0,
                                     int64_t count, std::vector<bf16>* scores, int64_t* ldo) {
  const int64_t hd = a.hd, pairs = hd / 2, panels = (a.s + kBf16PanelColumns - 1) / kBf16PanelColumns;
  thread_local std::vector<bf16> queries, query_pairs;
  queries.resize(static_cast<size_t>(count * hd));
  for (int64_t r = 0; r < count; ++r) {
    const bf16* qr = a.q + (g * a.rep + (r0 + r) / a.t) * a.q_head + ((r0 + r) % a.t) * a.q_row;
    std::copy(qr, qr + hd, &queries[r * hd]);
  }
  query_pairs.resize(queries.size());
  *ldo = panels * kBf16PanelColumns;
  scores->resize(static_cast<size_t>(count * *ldo));
  for (int64_t m0 = 0; m0 < count; m0 += kBf16PanelColumns) {
    const int64_t rows = std::min(kBf16PanelColumns, count - m0);
    bf16_interleave_rows(&queries[m0 * hd], rows, hd, pairs, &query_pairs[m0 * hd]);
    for (int64_t p = 0; p < panels; ++p) {
      bf16_panel_tile(&query_pairs[m0 * hd], rows, keys.data() + p * kBf16PanelColumns * hd, pairs,
                      scores->data() + m0 * *ldo + p * kBf16PanelColumns, *ldo);
    }
  }
}

// Row primitives of attend_group (as ggml-cpu/vec.h keeps its row kernels apart),
// inlined into it: the same code as when they were written in place.

// Float32 scores of query row `qr` against keys [s, s_len) of one kv head into p, four
// keys at a time: four independent chains of multiply-adds and lane sums overlap where
// one key's would wait on each other. Keys the mask hides are not computed.
FERRY_AVX512_BF16 inline __attribute__((always_inline)) void scores_row(const bf16* qr, const bf16* kg, int64_t k_row,
                                                                        int64_t hd, int64_t s, int64_t s_len,
                                                                        const float* mrow, float* p) {
  auto hidden = [&](int64_t x) { return mrow != nullptr && mrow[x] == -INFINITY; };
  for (; s + 4 <= s_len; s += 4) {
    if (hidden(s) && hidden(s + 1) && hidden(s + 2) && hidden(s + 3)) continue;  // e^-inf = 0: skipped
    const bf16* k0 = kg + s * k_row;
    __m512 d0 = _mm512_setzero_ps(), d1 = d0, d2 = d0, d3 = d0;
    for (int64_t d = 0; d < hd; d += 32) {
      const __m512bh qv = (__m512bh)_mm512_loadu_si512(qr + d);
      d0 = _mm512_dpbf16_ps(d0, qv, (__m512bh)_mm512_loadu_si512(k0 + d));
      d1 = _mm512_dpbf16_ps(d1, qv, (__m512bh)_mm512_loadu_si512(k0 + k_row + d));
      d2 = _mm512_dpbf16_ps(d2, qv, (__m512bh)_mm512_loadu_si512(k0 + 2 * k_row + d));
      d3 = _mm512_dpbf16_ps(d3, qv, (__m512bh)_mm512_loadu_si512(k0 + 3 * k_row + d));
    }
    p[s] = sum_lanes(d0);
    p[s + 1] = sum_lanes(d1);
    p[s + 2] = sum_lanes(d2);
    p[s + 3] = sum_lanes(d3);
  }
  for (; s < s_len; ++s) {
    if (hidden(s)) continue;
    const bf16* kr = kg + s * k_row;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t d = 0; d < hd; d += 32) {
      acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_loadu_si512(qr + d), (__m512bh)_mm512_loadu_si512(kr + d));
    }
    p[s] = sum_lanes(acc);
  }
}

// One row of scores p[0, s_len) to BF16 probabilities in place, as libtorch rounds them:
// the matmul's BF16 output, scaled in float32 and rounded again, plus the mask (a hidden
// key -inf whatever its score); then max, exp, sum, and each probability rounded to BF16.
FERRY_AVX512_BF16 inline __attribute__((always_inline)) void softmax_row_bf16(float scale_by, const float* mrow,
                                                                              int64_t s_len, float* p) {
  const __m512 scale = _mm512_set1_ps(scale_by), minus_inf = _mm512_set1_ps(-INFINITY);
  __m512 vmax = minus_inf;
  int64_t s = 0;
  for (s = 0; s < s_len; s += 16) {
    const __mmask16 live = lanes_for(s_len - s);
    __m512 x = round_bf16x16(_mm512_mul_ps(round_bf16x16(_mm512_maskz_loadu_ps(live, &p[s])), scale));
    if (mrow != nullptr) {
      const __m512 m = _mm512_maskz_loadu_ps(live, &mrow[s]);
      x = _mm512_mask_mov_ps(_mm512_add_ps(x, m), _mm512_cmp_ps_mask(m, minus_inf, _CMP_EQ_OQ), minus_inf);
    }
    _mm512_mask_storeu_ps(&p[s], live, x);
    vmax = _mm512_mask_max_ps(vmax, live, vmax, x);
  }
  vmax = _mm512_set1_ps(max_lanes(vmax));
  __m512 sum = _mm512_setzero_ps();
  for (s = 0; s + 16 <= s_len; s += 16) {
    const __m512 e = exp_lanes(_mm512_sub_ps(_mm512_loadu_ps(&p[s]), vmax));
    _mm512_storeu_ps(&p[s], e);
    sum = _mm512_add_ps(sum, e);
  }
  if (s < s_len) {
    const __mmask16 m = lanes_for(s_len - s);
    const __m512 e = exp_lanes(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, &p[s]), vmax));
    _mm512_mask_storeu_ps(&p[s], m, e);
    sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(m, e));
  }
  const __m512 inv = _mm512_set1_ps(1.0f / sum_lanes(sum));
  for (s = 0; s < s_len; s += 16) {
    const __mmask16 live = lanes_for(s_len - s);
    _mm512_mask_storeu_ps(&p[s], live, round_bf16x16(_mm512_mul_ps(_mm512_maskz_loadu_ps(live, &p[s]), inv)));
  }
}

// The weighted sum of the values for one row (p1 null) or two rows at once (p0 and p1,
// into dst0 and dst1), over head columns [d0, d0 + width): one dispatch on the width.
FERRY_AVX512_BF16 inline __attribute__((always_inline)) void weighted_sum_rows(const float* p0, const float* p1,
                                                                               int64_t s_len, const bf16* v,
                                                                               int64_t v_row, int64_t width, bf16* dst0,
                                                                               bf16* dst1) {
  if (p1 == nullptr) {
    switch (width / 16) {
      case 2: return weighted_sum<2>(p0, s_len, v, v_row, dst0);
      case 4: return weighted_sum<4>(p0, s_len, v, v_row, dst0);
      case 6: return weighted_sum<6>(p0, s_len, v, v_row, dst0);
      default: return weighted_sum<8>(p0, s_len, v, v_row, dst0);
    }
  }
  switch (width / 16) {
    case 2: return weighted_sum2<2>(p0, p1, s_len, v, v_row, dst0, dst1);
    case 4: return weighted_sum2<4>(p0, p1, s_len, v, v_row, dst0, dst1);
    case 6: return weighted_sum2<6>(p0, p1, s_len, v, v_row, dst0, dst1);
    default: return weighted_sum2<8>(p0, p1, s_len, v, v_row, dst0, dst1);
  }
}

// Every query row of kv head g: scores, softmax, then the weighted sum of values.
// Scores of one row in `p`, a buffer per thread that only grows. Many rows at once
// (a prefill or a verify) take the tiled path: scores of up to kScoreRows rows as one
// panel product, and probabilities times values 16 rows at a time.
FERRY_AVX512_BF16 void attend_group(const Shape& a, int64_t g) {
  const int64_t rows = a.rep * a.t, s_len = a.s, hd = a.hd;
  thread_local std::vector<float> buffer;
  thread_local std::vector<bf16> keys, scores, values, probs, prob_pairs, sums;
  buffer.resize(static_cast<size_t>(2 * s_len));
  int64_t ldo = 0;
  const bool tiled = a.t > 1 && rows >= kMinTiledRows;
  const int64_t key_pairs = (s_len + 1) / 2;  // the tiled path's probabilities, an odd key count padded with a 0
  if (tiled) {
    pack_group_keys(a, g, &keys);
    pack_group_values(a, g, &values);
    probs.assign(static_cast<size_t>(kBf16PanelColumns * 2 * key_pairs), bf16(0.0f));
    prob_pairs.resize(probs.size());
    sums.resize(static_cast<size_t>(kBf16PanelColumns * hd));
  }
  const bf16* kg = a.k + g * a.k_head;
  const bf16* vg = a.v + g * a.v_head;
  auto out_row = [&](int64_t r) { return a.out + (r % a.t) * a.out_row + (g * a.rep + r / a.t) * hd; };
  for (int64_t r = 0; r < rows; ++r) {
    float* p = buffer.data() + (r % 2) * s_len;
    const int64_t h = g * a.rep + r / a.t, i = r % a.t;
    const bf16* qr = a.q + h * a.q_head + i * a.q_row;
    const float* mrow = a.mask != nullptr ? a.mask + i * s_len : nullptr;
    int64_t s = 0;
    if (tiled) {
      if (r % kScoreRows == 0) group_scores(a, g, keys, r, std::min(kScoreRows, rows - r), &scores, &ldo);
      const bf16* row_scores = &scores[(r % kScoreRows) * ldo];
      for (; s + 16 <= s_len; s += 16) _mm512_storeu_ps(&p[s], load_bf16x16(&row_scores[s]));
      for (; s < s_len; ++s) p[s] = static_cast<float>(row_scores[s]);
    }
    scores_row(qr, kg, a.k_row, hd, s, s_len, mrow, p);
    softmax_row_bf16(a.scale, mrow, s_len, p);

    if (tiled) {  // a block of up to 16 rows' probabilities, then their product with the values
      const int64_t m = r % kBf16PanelColumns;
      for (s = 0; s + 16 <= s_len; s += 16) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(&probs[m * 2 * key_pairs + s]),
                            narrow_bf16x16(_mm512_loadu_ps(&p[s])));
      }
      for (; s < s_len; ++s) probs[m * 2 * key_pairs + s] = bf16(p[s]);
      if (m + 1 < kBf16PanelColumns && r + 1 < rows) continue;
      const int64_t r0 = r - m, count = m + 1;
      bf16_interleave_rows(probs.data(), count, 2 * key_pairs, key_pairs, prob_pairs.data());
      for (int64_t c = 0; c < hd / kBf16PanelColumns; ++c) {
        bf16_panel_tile(prob_pairs.data(), count, &values[c * key_pairs * 2 * kBf16PanelColumns], key_pairs,
                        &sums[c * kBf16PanelColumns], hd);
      }
      for (int64_t k = 0; k < count; ++k) std::copy(sums.data() + k * hd, sums.data() + (k + 1) * hd, out_row(r0 + k));
      continue;
    }
    if (r % 2 == 0 && r + 1 < rows) continue;  // its pair's probabilities next
    for (int64_t d0 = 0; d0 < hd; d0 += 128) {  // rows r - 1 and r together, or a last odd row alone
      const int64_t width = std::min<int64_t>(128, hd - d0);
      if (r % 2 == 1) {
        weighted_sum_rows(buffer.data(), p, s_len, vg + d0, a.v_row, width, out_row(r - 1) + d0, out_row(r) + d0);
      } else {
        weighted_sum_rows(p, nullptr, s_len, vg + d0, a.v_row, width, out_row(r) + d0, nullptr);
      }
    }
  }
}

}  // namespace

bool bf16_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  if (!bf16_kernel_enabled()) return false;
  for (const at::Tensor* x : {&q, &k, &v}) {
    if (x->scalar_type() != at::kBFloat16 || !x->device().is_cpu() || x->dim() != 3 || x->stride(2) != 1) return false;
  }
  const int64_t nh = q.size(0), t = q.size(1), hd = q.size(2), nkv = k.size(0), s = k.size(1);
  if (t < 1 || s < 1 || nkv < 1 || nh % nkv != 0 || hd % 32 != 0) return false;
  if (k.size(2) != hd || v.size(0) != nkv || v.size(1) != s || v.size(2) != hd) return false;
  if (!mask.defined()) return true;
  return mask.scalar_type() == at::kFloat && mask.device().is_cpu() && mask.dim() == 2 && mask.size(0) == t &&
         mask.size(1) == s;
}

at::Tensor bf16_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  TORCH_CHECK(bf16_attention_applies(q, k, v, mask), "bf16_attention: unsupported shapes or dtypes");
  const int64_t nh = q.size(0), t = q.size(1), hd = q.size(2), nkv = k.size(0), s = k.size(1);
  const at::Tensor m = mask.defined() ? mask.contiguous() : mask;
  at::Tensor out = at::empty({t, nh * hd}, q.options());
  Shape a;
  a.t = t;
  a.s = s;
  a.hd = hd;
  a.rep = nh / nkv;
  // As libtorch multiplies a BF16 tensor by a double: in float32.
  a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  a.q = q.data_ptr<bf16>();
  a.k = k.data_ptr<bf16>();
  a.v = v.data_ptr<bf16>();
  a.q_head = q.stride(0);
  a.q_row = q.stride(1);
  a.k_head = k.stride(0);
  a.k_row = k.stride(1);
  a.v_head = v.stride(0);
  a.v_row = v.stride(1);
  a.mask = m.defined() ? m.data_ptr<float>() : nullptr;
  a.out = out.data_ptr<bf16>();
  a.out_row = nh * hd;
  if (a.rep * t * s * nkv < kMinParallelWork) {
    for (int64_t g = 0; g < nkv; ++g) attend_group(a, g);
  } else {
    for_each_chunk(nkv, [&](int64_t g) { attend_group(a, g); });
  }
  return out;
}

}  // namespace ferry::eval
