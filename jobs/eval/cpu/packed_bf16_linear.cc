#include "jobs/eval/cpu/packed_bf16_linear.h"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>
#include <vector>

#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/compute_threads.h"

namespace ferry::eval {
namespace {

using bf16 = c10::BFloat16;

constexpr int64_t kPairWidth = 2 * kBf16PanelColumns;  // BF16 values per (panel, input pair)
// Rows of x whose sums stay in registers: 16 vectors of sums + the weight vector.
constexpr int kMaxTileRows = 16;
// Panels a thread takes at a time (48 output columns).
constexpr int64_t kChunkPanels = 3;
// Software prefetch distance along a panel: the hardware prefetcher alone leaves a
// core short of its read speed on a single row.
constexpr int64_t kPrefetchBytes = 4096;

// acc += w * (the two BF16 inputs at `pair`, broadcast to every 32-bit lane), with the
// broadcast folded into vdpbf16ps's memory operand ({1to16}): GCC 12 emits a separate
// vpbroadcastd for the intrinsic form, an extra vector op per multiply-add.
// (The operand is read as one 32-bit value of a type that may alias the BF16 pair.)
typedef int32_t __attribute__((may_alias)) PairBits;
FERRY_AVX512_BF16 inline __m512 dot_pair(__m512 acc, __m512bh w, const bf16* pair) {
  __asm__("vdpbf16ps %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const PairBits*>(pair)));
  return acc;
}

// MR rows of x (pair-major: pairs[2 (j MR + m) + e] is row m's input 2j + e) against one
// panel: each step loads the panel's vector for pair j once and feeds it to MR
// multiply-adds. Under 8 rows, two sets of sums (even and odd pairs) keep the adds'
// latency hidden; from 8 rows the rows themselves do.
template <int MR>
FERRY_AVX512_BF16 void panel_tile(const bf16* pairs, const bf16* panel, int64_t pair_count, bf16* out,
                                         int64_t ldo) {
  constexpr int kSets = MR < 8 ? 2 : 1;
  __m512 acc[kSets * MR];
#pragma GCC unroll 32
  for (int i = 0; i < kSets * MR; ++i) acc[i] = _mm512_setzero_ps();
  const char* ahead = reinterpret_cast<const char*>(panel) + kPrefetchBytes;
  int64_t j = 0;
  for (; j + kSets <= pair_count; j += kSets) {
#pragma GCC unroll 2
    for (int s = 0; s < kSets; ++s) {
      _mm_prefetch(ahead + (j + s) * 64, _MM_HINT_T0);
      const __m512bh w = (__m512bh)_mm512_loadu_si512(panel + (j + s) * kPairWidth);
      const bf16* xs = pairs + 2 * (j + s) * MR;
#pragma GCC unroll 16
      for (int m = 0; m < MR; ++m) acc[s * MR + m] = dot_pair(acc[s * MR + m], w, xs + 2 * m);
    }
  }
  if (j < pair_count) {  // an odd pair left over (two sets only)
    const __m512bh w = (__m512bh)_mm512_loadu_si512(panel + j * kPairWidth);
#pragma GCC unroll 16
    for (int m = 0; m < MR; ++m) {
      acc[m] = dot_pair(acc[m], w, pairs + 2 * (j * MR + m));
    }
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; ++m) {
    const __m512 sum = kSets == 2 ? _mm512_add_ps(acc[m], acc[(kSets - 1) * MR + m]) : acc[m];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + m * ldo), (__m256i)_mm512_cvtneps_pbh(sum));
  }
}

// out[i * 16 + m] = rows[m * stride + i] for 16 rows m and 16 32-bit values i: a 16 x 16
// transpose in registers (unpacks within 128-bit lanes, then lane shuffles).
// GCC 12's unpack and shuffle intrinsics start from _mm512_undefined_epi32() and warn
// of it as uninitialized (GCC bug 105593, fixed in 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
FERRY_AVX512_BF16 inline void transpose_16x16(const PairBits* rows, int64_t stride, PairBits* out) {
  __m512i r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(rows + i * stride);
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    const int h = i / 4 * 8 + i % 4;  // 0-3, 8-11
    t[h] = _mm512_shuffle_i32x4(r[h], r[h + 4], 0x88);
    t[h + 4] = _mm512_shuffle_i32x4(r[h], r[h + 4], 0xdd);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    _mm512_storeu_si512(out + i * 16, _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88));
    _mm512_storeu_si512(out + (i + 8) * 16, _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd));
  }
}
#pragma GCC diagnostic pop

// A full tile of 16 rows (`stride` pairs apart) made pair-major: dst's pair j holds the
// 16 rows' pair j side by side, 16 pairs at a time by a transpose in registers (a scalar
// copy per pair was 2-3 % of a verify, a 16-way gather per pair still 4 %), the rest gathered.
FERRY_AVX512_BF16 void interleave_tile(const bf16* rows, int64_t stride, int64_t pair_count, bf16* dst) {
  const auto* src = reinterpret_cast<const PairBits*>(rows);
  auto* out = reinterpret_cast<PairBits*>(dst);
  int64_t j = 0;
  for (; j + 16 <= pair_count; j += 16) transpose_16x16(src + j, stride, out + j * kMaxTileRows);
  const __m512i offsets = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                             _mm512_set1_epi32(static_cast<int32_t>(stride)));
  for (; j < pair_count; ++j) {
    const __m512i pairs = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), 0xFFFF, offsets, src + j, 4);
    _mm512_storeu_si512(out + j * kMaxTileRows, pairs);
  }
}

using TileFn = void (*)(const bf16*, const bf16*, int64_t, bf16*, int64_t);

template <int... MR>
constexpr std::array<TileFn, sizeof...(MR)> tiles(std::integer_sequence<int, MR...>) {
  return {&panel_tile<MR + 1>...};
}
constexpr auto kTiles = tiles(std::make_integer_sequence<int, kMaxTileRows>());

}  // namespace

bool bf16_weight_packable(const at::Tensor& w, bool padded) {
  return bf16_kernel_enabled() && w.scalar_type() == at::kBFloat16 && w.device().is_cpu() && w.dim() == 2 &&
         w.is_contiguous() && w.size(0) > 0 && (padded || w.size(0) % kBf16PanelColumns == 0) && w.size(1) > 0 &&
         w.size(1) % 2 == 0;
}

int64_t bf16_panels_for(int64_t n) { return (n + kBf16PanelColumns - 1) / kBf16PanelColumns; }

at::Tensor pack_bf16_weight(const at::Tensor& w) {
  at::Tensor panels = at::empty({bf16_panels_for(w.size(0)), w.size(1) / 2, kPairWidth}, w.options());
  pack_bf16_panels(w, panels);
  return panels;
}

void pack_bf16_panels(const at::Tensor& rows, const at::Tensor& panels) {
  const int64_t n = rows.size(0), pairs = rows.size(1) / 2;
  TORCH_CHECK(rows.is_contiguous() && panels.is_contiguous() && panels.size(0) == bf16_panels_for(n) &&
                  panels.size(1) == pairs && panels.size(2) == kPairWidth,
              "pack_bf16_panels: bad source or destination");
  // [panels, 16 columns, K/2 pairs] -> [panels, K/2 pairs, 16 columns] of 32-bit pairs.
  // A plain loop over pairs rather than ATen's copy of a permuted view, which moves
  // 2-byte elements one at a time: packing is most of a large checkpoint's load time.
  const auto* src = static_cast<const uint32_t*>(rows.data_ptr());
  auto* dst = static_cast<uint32_t*>(panels.data_ptr());
  for_each_chunk(panels.size(0), [&](int64_t p) {
    const uint32_t* in = src + p * kBf16PanelColumns * pairs;
    uint32_t* out = dst + p * kBf16PanelColumns * pairs;
    const int64_t columns = std::min(kBf16PanelColumns, n - p * kBf16PanelColumns);
    if (columns < kBf16PanelColumns) {  // the last panel of a padded weight: zeros past N
      for (int64_t j = 0; j < pairs; ++j) {
        for (int64_t c = 0; c < kBf16PanelColumns; ++c) {
          out[j * kBf16PanelColumns + c] = c < columns ? in[c * pairs + j] : 0;
        }
      }
      return;
    }
    for (int64_t j = 0; j < pairs; ++j) {
      for (int64_t c = 0; c < kBf16PanelColumns; ++c) out[j * kBf16PanelColumns + c] = in[c * pairs + j];
    }
  });
}

bool is_packed_bf16_weight(const at::Tensor& w) {
  return w.dim() == 3 && w.size(2) == kPairWidth && w.scalar_type() == at::kBFloat16;
}

std::vector<at::Tensor> packed_bf16_linear_all(const at::Tensor& x_in, const std::vector<at::Tensor>& weights) {
  TORCH_CHECK(!weights.empty(), "packed_bf16_linear_all: no weights");
  const int64_t pair_count = weights[0].size(1), k_len = 2 * pair_count;
  TORCH_CHECK(x_in.scalar_type() == at::kBFloat16 && x_in.device().is_cpu() && x_in.size(-1) == k_len,
              "packed_bf16_linear: x must be BF16 [..., ", k_len, "] on the CPU, got ", x_in.sizes(), " ",
              x_in.scalar_type());
  for (const at::Tensor& w : weights) {
    TORCH_CHECK(is_packed_bf16_weight(w) && w.size(1) == pair_count && w.is_contiguous() && bf16_kernel_supported(),
                "packed_bf16_linear: bad packed weight");
  }
  const at::Tensor x = x_in.reshape({-1, k_len}).contiguous();
  const int64_t m_len = x.size(0);
  std::vector<at::Tensor> outs;
  // Chunks of kChunkPanels panels, numbered across the weights in order: one parallel
  // region serves them all (a decode step's q/k/v or gate/up), and a thread that
  // finishes one matrix goes straight on to the next.
  std::vector<int64_t> first_chunk = {0};
  for (const at::Tensor& w : weights) {
    outs.push_back(at::empty({m_len, w.size(0) * kBf16PanelColumns}, x.options()));
    first_chunk.push_back(first_chunk.back() + (w.size(0) + kChunkPanels - 1) / kChunkPanels);
  }
  auto shaped = [&] {
    for (size_t i = 0; i < outs.size(); ++i) {
      std::vector<int64_t> shape = x_in.sizes().vec();
      shape.back() = outs[i].size(1);
      outs[i] = outs[i].view(shape);
    }
    return outs;
  };
  if (m_len == 0) return shaped();

  // Blocks of up to 16 rows, each pair-major (a step's pairs for all rows in one cache
  // line); a single row is already in that order.
  const int64_t blocks = (m_len + kMaxTileRows - 1) / kMaxTileRows;
  const bf16* rows = x.data_ptr<bf16>();
  // Kept per thread across calls: a fresh buffer per call was zero-filled and, past
  // glibc's mmap threshold (a prefill chunk's rows), faulted in page by page each time.
  static thread_local std::vector<bf16> interleaved;
  const bf16* pairs = rows;
  if (m_len > 1) {
    if (interleaved.size() < static_cast<size_t>(m_len * k_len)) interleaved.resize(static_cast<size_t>(m_len * k_len));
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t m0 = b * kMaxTileRows;
      bf16_interleave_rows(rows + m0 * k_len, std::min<int64_t>(kMaxTileRows, m_len - m0), k_len, pair_count,
                           interleaved.data() + m0 * k_len);
    }
    pairs = interleaved.data();
  }

  for_each_chunk(first_chunk.back(), [&](int64_t chunk) {
    const size_t i =
        static_cast<size_t>(std::upper_bound(first_chunk.begin(), first_chunk.end(), chunk) - first_chunk.begin() - 1);
    const int64_t panels = weights[i].size(0), n_len = panels * kBf16PanelColumns;
    const bf16* wp = weights[i].data_ptr<bf16>();
    bf16* op = outs[i].data_ptr<bf16>();
    const int64_t c = chunk - first_chunk[i];
    const int64_t p1 = std::min(panels, (c + 1) * kChunkPanels);
    for (int64_t p = c * kChunkPanels; p < p1; ++p) {
      // Every block of rows against this panel while it is in cache.
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t m0 = b * kMaxTileRows, mr = std::min<int64_t>(kMaxTileRows, m_len - m0);
        kTiles[mr - 1](pairs + m0 * k_len, wp + p * pair_count * kPairWidth, pair_count,
                       op + m0 * n_len + p * kBf16PanelColumns, n_len);
      }
    }
  });
  return shaped();
}

at::Tensor packed_bf16_linear(const at::Tensor& x, const at::Tensor& packed) {
  return packed_bf16_linear_all(x, {packed})[0];
}

void bf16_interleave_rows(const bf16* rows, int64_t count, int64_t stride, int64_t pair_count, bf16* dst) {
  if (count == kMaxTileRows && stride % 2 == 0) {  // the transposes move 32-bit pairs: a row starts on one
    interleave_tile(rows, stride / 2, pair_count, dst);
    return;
  }
  for (int64_t m = 0; m < count; ++m) {
    const bf16* src = rows + m * stride;
    for (int64_t j = 0; j < pair_count; ++j) std::memcpy(dst + 2 * (j * count + m), src + 2 * j, 2 * sizeof(bf16));
  }
}

void bf16_panel_tile(const bf16* pairs, int64_t count, const bf16* panel, int64_t pair_count, bf16* out,
                     int64_t ldo) {
  kTiles[count - 1](pairs, panel, pair_count, out, ldo);
}

}  // namespace ferry::eval
