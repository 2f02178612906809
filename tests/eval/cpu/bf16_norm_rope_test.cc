// RMSNorm and RoPE on BF16 rows against libtorch's path (tensor_ops with the kernels
// off) on the same inputs: RoPE has no sum, so every value must be equal; RMSNorm sums
// its squares in another order, so a value may differ by the last BF16 bit where the
// scale lands next to a rounding boundary, and the rest must be equal. Both against a
// float64 reference too, and the inputs they must leave to libtorch. The per-head pass
// (q_norm/k_norm then RoPE, transposed) must equal the two kernels run one after the other.
#include "jobs/eval/cpu/bf16_norm_rope.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/tensor_ops.h"
#include "tests/eval/cpu/bf16_kernel_test.h"
#include "tests/eval/tensor_test_util.h"

namespace ferry::eval {
namespace {

using testing::bf16_randn;
using testing::relative_error;

using Bf16NormRopeTest = testing::Bf16KernelTest;

template <typename F>
at::Tensor on_libtorch(F f) {
  return testing::with_kernels_off(set_bf16_kernel_enabled, f);
}

TEST_F(Bf16NormRopeTest, RmsNormMatchesLibtorchAndFloat64) {
  // A decode step's row, a verify's block, per-head q/k norms, a prefill chunk's rows
  // (split over threads), and the tiny models' width.
  const std::vector<std::vector<int64_t>> shapes = {{1, 1024}, {16, 1024}, {16, 16, 128}, {600, 256}, {3, 16}};
  for (const auto& shape : shapes) {
    const int64_t h = shape.back(), rows = at::prod(at::tensor(shape)).item<int64_t>() / h;
    const at::Tensor x = (bf16_randn(rows, h, 3 + h) * 3).to(at::kBFloat16).view(shape);
    const at::Tensor w = (1.0 + 0.2 * bf16_randn(1, h, 5).to(at::kFloat)).to(at::kBFloat16).view({h});
    ASSERT_TRUE(bf16_rms_norm_applies(x, w));
    const at::Tensor got = rms_norm(x, w, 1e-6);
    const at::Tensor want = on_libtorch([&] { return rms_norm(x, w, 1e-6); });
    ASSERT_EQ(got.sizes(), want.sizes());
    ASSERT_EQ(got.scalar_type(), at::kBFloat16);
    const at::Tensor g = got.to(at::kFloat), l = want.to(at::kFloat);
    // At most one BF16 step (2^-7 relative) apart, and almost all identical.
    EXPECT_TRUE(at::all((g - l).abs() <= l.abs() * (1.0 / 128) + 1e-30).item<bool>()) << shape.size();
    EXPECT_GT(at::eq(g, l).to(at::kFloat).mean().item<double>(), 0.99) << h;
    const at::Tensor x64 = x.to(at::kDouble);
    const at::Tensor ref = x64 / at::sqrt(x64.pow(2).mean(-1, true) + 1e-6) * w.to(at::kDouble);
    EXPECT_LT(relative_error(got.to(at::kDouble), ref), 8e-3);
  }
}

TEST_F(Bf16NormRopeTest, RopeEqualsLibtorchValueForValue) {
  const int64_t t = 5, d = 128;
  ComputeOptions bf16;
  bf16.dtype = at::kBFloat16;
  RopeCache cache(d, 1e6, bf16);
  const RopeTables rope = cache.at(37, t);
  for (int64_t heads : {1, 8, 16}) {
    const at::Tensor x = (bf16_randn(heads * t, d, 11 + heads) * 2).to(at::kBFloat16).view({heads, t, d});
    ASSERT_TRUE(bf16_rope_applies(x, rope.cos, rope.sin));
    const at::Tensor got = apply_rope(x, rope);
    const at::Tensor want = on_libtorch([&] { return apply_rope(x, rope); });
    EXPECT_TRUE(at::equal(got, want)) << heads << " heads";
    // And the rotation itself, in float64: x cos + rotate_half(x) sin.
    const at::Tensor x64 = x.to(at::kDouble);
    const at::Tensor rotated = at::cat({-x64.narrow(-1, d / 2, d / 2), x64.narrow(-1, 0, d / 2)}, -1);
    const at::Tensor ref = x64 * rope.cos.to(at::kDouble) + rotated * rope.sin.to(at::kDouble);
    EXPECT_LT(relative_error(got.to(at::kDouble), ref), 8e-3);
  }
}

TEST_F(Bf16NormRopeTest, NormRopePerHeadEqualsTheTwoKernelsAndLibtorch) {
  // A decode step (T = 1), a verify's block, a prefill chunk's rows (split over threads);
  // head sizes of Qwen3 (128) and Qwen3.5's full attention (256).
  ComputeOptions bf16;
  bf16.dtype = at::kBFloat16;
  for (const auto& [t, heads, d] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 16, 128}, {16, 16, 128}, {16, 8, 128}, {64, 8, 128}, {16, 4, 256}}) {
    RopeCache cache(d, 1e6, bf16);
    const RopeTables rope = cache.at(29, t);
    const at::Tensor x = (bf16_randn(t * heads, d, 7 + t + heads) * 3).to(at::kBFloat16).view({t, heads, d});
    const at::Tensor w = (1.0 + 0.2 * bf16_randn(1, d, 5).to(at::kFloat)).to(at::kBFloat16).view({d});
    ASSERT_TRUE(bf16_norm_rope_heads_applies(x, w, rope.cos, rope.sin));
    const at::Tensor got = norm_rope_heads(x, w, 1e-6, rope);
    ASSERT_EQ(got.sizes(), (at::IntArrayRef{heads, t, d}));
    ASSERT_TRUE(got.is_contiguous());
    // The two one-pass kernels one after the other: the same roundings, so equal.
    const at::Tensor two = bf16_rope(bf16_rms_norm(x, w, 1e-6).transpose(0, 1).contiguous(), rope.cos, rope.sin);
    EXPECT_TRUE(at::equal(got, two)) << t << " x " << heads << " x " << d;
    // libtorch's path: RMSNorm's sum in another order, so a value may sit one BF16 step
    // off (times the rotation's two terms), almost all equal.
    const at::Tensor want = on_libtorch([&] { return norm_rope_heads(x, w, 1e-6, rope); });
    const at::Tensor g = got.to(at::kFloat), l = want.to(at::kFloat);
    EXPECT_TRUE(at::all((g - l).abs() <= l.abs() * (2.0 / 128) + 0.02).item<bool>()) << t;
    EXPECT_GT(at::eq(g, l).to(at::kFloat).mean().item<double>(), 0.98) << t;
  }
}

TEST_F(Bf16NormRopeTest, LeavesOtherInputsToLibtorch) {
  const at::Tensor x = bf16_randn(4, 64, 1), w = bf16_randn(1, 64, 2).view({64});
  EXPECT_FALSE(bf16_rms_norm_applies(x.to(at::kFloat), w.to(at::kFloat)));  // float32
  EXPECT_FALSE(bf16_rms_norm_applies(x.narrow(1, 0, 48), w.narrow(0, 0, 48)));  // not contiguous
  EXPECT_FALSE(bf16_rms_norm_applies(x.narrow(1, 0, 8).contiguous(), w.narrow(0, 0, 8)));  // 8 wide
  EXPECT_FALSE(bf16_rms_norm_applies(x, bf16_randn(1, 32, 3).view({32})));  // width mismatch
  set_bf16_kernel_enabled(false);
  EXPECT_FALSE(bf16_rms_norm_applies(x, w));
  set_bf16_kernel_enabled(true);
  const at::Tensor cs = bf16_randn(4, 64, 4);
  EXPECT_TRUE(bf16_rope_applies(x.view({1, 4, 64}), cs, cs));
  EXPECT_FALSE(
      bf16_rope_applies(x.view({2, 2, 64}).transpose(0, 1), cs.narrow(0, 0, 2), cs.narrow(0, 0, 2)));  // strided
  EXPECT_FALSE(bf16_rope_applies(x.narrow(1, 0, 16).contiguous().view({1, 4, 16}), cs.narrow(1, 0, 16).contiguous(),
                                 cs.narrow(1, 0, 16).contiguous()));  // 16 wide (the tiny models)
  EXPECT_FALSE(bf16_rope_applies(x.view({1, 4, 64}), cs.narrow(0, 0, 3), cs.narrow(0, 0, 3)));  // wrong T
  EXPECT_TRUE(bf16_norm_rope_heads_applies(x.view({4, 1, 64}), w, cs, cs));
  EXPECT_FALSE(bf16_norm_rope_heads_applies(x.view({1, 4, 64}), w, cs, cs));  // T = 1 against 4 positions
  EXPECT_FALSE(bf16_norm_rope_heads_applies(x.view({2, 2, 64}).transpose(0, 1), w, cs.narrow(0, 0, 2),
                                            cs.narrow(0, 0, 2)));  // strided
  EXPECT_FALSE(bf16_norm_rope_heads_applies(x.view({4, 64}), w, cs, cs));  // not per head
}

}  // namespace
}  // namespace ferry::eval
