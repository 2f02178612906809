// The BF16 attention kernel against a float64 attention of the same BF16 inputs and
// against libtorch's path (attention_with_mask with the kernels off) for one row (a
// decode step), a few, a whole block (a verify, a draft) and more (a prefill chunk),
// grouped query heads, keys
// read through cache views (strided heads), causal and sliding masks and none, head
// sizes of one and two 128-wide passes; and the inputs it must leave to libtorch.
#include "jobs/eval/cpu/bf16_attention.h"

#include <gtest/gtest.h>

#include <limits>

#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/tensor_ops.h"
#include "tests/eval/cpu/bf16_kernel_test.h"
#include "tests/eval/tensor_test_util.h"

namespace ferry::eval {
namespace {

using testing::bf16_randn;
using testing::relative_error;

using Bf16AttentionTest = testing::Bf16KernelTest;

// [heads, rows, hd] random BF16 values.
at::Tensor randn3(int64_t heads, int64_t rows, int64_t hd, int64_t seed) {
  return bf16_randn(heads * rows, hd, seed).view({heads, rows, hd});
}

// softmax(q k^T / sqrt(hd) + mask) v in float64, query head h on kv head h / rep.
at::Tensor float64_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  const int64_t nh = q.size(0), t = q.size(1), hd = q.size(2), rep = nh / k.size(0);
  at::Tensor kk = k.to(at::kDouble).repeat_interleave(rep, 0), vv = v.to(at::kDouble).repeat_interleave(rep, 0);
  at::Tensor scores = at::bmm(q.to(at::kDouble), kk.transpose(1, 2)) / std::sqrt(static_cast<double>(hd));
  if (mask.defined()) scores = scores + mask.to(at::kDouble);
  return at::bmm(at::softmax(scores, -1), vv).transpose(0, 1).reshape({t, nh * hd});
}

at::Tensor libtorch_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  set_bf16_kernel_enabled(false);
  at::Tensor out = attention_with_mask(q, k, v, mask);
  set_bf16_kernel_enabled(true);
  return out;
}

// A sliding window of w keys ending at each query's position (past + i).
at::Tensor sliding_mask(int64_t t, int64_t s, int64_t w) {
  at::Tensor qpos = at::arange(s - t, s, at::kLong).unsqueeze(1), kpos = at::arange(0, s, at::kLong).unsqueeze(0);
  at::Tensor visible = (kpos <= qpos).logical_and(qpos - kpos < w);
  return at::zeros({t, s}, at::kFloat).masked_fill(visible.logical_not(), -std::numeric_limits<float>::infinity());
}

// bf16_attention takes these inputs and returns [T, nh * hd] BF16 as close to a float64
// attention as libtorch's own BF16 path is.
void expect_matches_float64_and_libtorch(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                         const at::Tensor& mask) {
  ASSERT_TRUE(bf16_attention_applies(q, k, v, mask));
  const at::Tensor got = bf16_attention(q, k, v, mask);
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{q.size(1), q.size(0) * q.size(2)}));
  ASSERT_EQ(got.scalar_type(), at::kBFloat16);
  const at::Tensor exact = float64_attention(q, k, v, mask);
  const at::Tensor theirs = libtorch_attention(q, k, v, mask).to(at::kDouble);
  const double ours_err = relative_error(got.to(at::kDouble), exact), theirs_err = relative_error(theirs, exact);
  // Scores rounded to BF16 twice, as libtorch's path does, then the output once:
  // no further from the exact result than libtorch's own, and apart from it by
  // the few BF16 steps that float32 sums in another order can flip.
  EXPECT_LT(ours_err, 3e-2);
  EXPECT_LE(ours_err, theirs_err + 4e-3);
  EXPECT_LT(relative_error(got.to(at::kDouble), theirs), 2e-2);
}

TEST_F(Bf16AttentionTest, MatchesFloat64AndLibtorchForDecodeVerifyAndDraftShapes) {
  const int64_t nh = 8, nkv = 2;
  for (int64_t hd : {32, 128, 256}) {
    for (int64_t t : {1, 3, 16, 40}) {
      for (int64_t s : {t, t + 1, int64_t{37}, int64_t{300}}) {
        for (int mask_kind = 0; mask_kind < 3; ++mask_kind) {
          if (s < t) continue;  // queries sit at the last t of the s positions
          SCOPED_TRACE("hd " + std::to_string(hd) + " t " + std::to_string(t) + " s " + std::to_string(s) +
                       " mask " + std::to_string(mask_kind));
          const int64_t seed = hd * 1000 + t * 100 + s;
          // Queries as the target makes them ([T, nh, hd] transposed), keys and values as
          // views of a larger cache, as KvCache::keys() returns them.
          const at::Tensor q = randn3(t, nh, hd, seed).transpose(0, 1);
          const at::Tensor k = randn3(nkv, s + 5, hd, seed + 1).narrow(1, 0, s);
          const at::Tensor v = randn3(nkv, s + 5, hd, seed + 2).narrow(1, 0, s);
          const at::Tensor mask = mask_kind == 0   ? at::Tensor()
                                  : mask_kind == 1 ? causal_mask(t, s, s - t, at::kCPU)
                                                   : sliding_mask(t, s, 4);
          if (mask_kind == 1 && !mask.defined()) continue;  // one row sees every key: no mask to test
          expect_matches_float64_and_libtorch(q, k, v, mask);
        }
      }
    }
  }
}

// The packed-tile path (from 8 query rows a kv head over 2+ positions) at every kind
// of tile height (8, 10, 18, 32 rows: a last block of 2 or 8 rows, an odd key-pair
// count at 37 keys), its kv heads split over the threads (8 kv heads), and keys and
// values at an odd row stride (views of a wider cache), which the register transposes
// cannot take.
TEST_F(Bf16AttentionTest, TiledPathAtEveryTileHeightAcrossThreadsAndOddStrides) {
  const int64_t nh = 16, nkv = 8, hd = 128;
  for (int64_t t : {4, 5, 9, 16}) {
    for (int64_t s : {t, int64_t{37}, int64_t{70}}) {
      for (int64_t pad : {0, 1}) {
        SCOPED_TRACE("t " + std::to_string(t) + " s " + std::to_string(s) + " row padding " + std::to_string(pad));
        const int64_t seed = 7000 + t * 100 + s + pad;
        const at::Tensor q = randn3(t, nh, hd, seed).transpose(0, 1);
        const at::Tensor k = randn3(nkv, s, hd + pad, seed + 1).narrow(2, 0, hd);
        const at::Tensor v = randn3(nkv, s, hd + pad, seed + 2).narrow(2, 0, hd);
        const at::Tensor mask = causal_mask(t, s, s - t, at::kCPU);
        expect_matches_float64_and_libtorch(q, k, v, mask);
      }
    }
  }
}

TEST_F(Bf16AttentionTest, LeavesOtherInputsToLibtorch) {
  const at::Tensor q = randn3(4, 2, 64, 1), k = randn3(2, 9, 64, 2), v = randn3(2, 9, 64, 3);
  EXPECT_TRUE(bf16_attention_applies(q, k, v, at::Tensor()));
  EXPECT_FALSE(bf16_attention_applies(q.to(at::kFloat), k.to(at::kFloat), v.to(at::kFloat), at::Tensor()));
  EXPECT_FALSE(bf16_attention_applies(randn3(4, 2, 16, 5), randn3(2, 9, 16, 6), randn3(2, 9, 16, 7),
                                      at::Tensor()));  // head size not a multiple of 32
  EXPECT_FALSE(bf16_attention_applies(randn3(3, 2, 64, 8), k, v, at::Tensor()));  // 3 heads on 2 kv heads
  EXPECT_FALSE(bf16_attention_applies(q, k, v, at::zeros({2, 8})));                  // mask of the wrong width
  EXPECT_FALSE(bf16_attention_applies(q, k.transpose(1, 2).contiguous().transpose(1, 2), v, at::Tensor()));
  set_bf16_kernel_enabled(false);
  EXPECT_FALSE(bf16_attention_applies(q, k, v, at::Tensor()));
}

}  // namespace
}  // namespace ferry::eval
