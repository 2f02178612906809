// The SwiGLU gate on BF16 rows (silu(gate) * up, in place) against libtorch's two ops on
// the same inputs (the same BF16 roundings) and against float64. The two e^x differ in
// the last float32 bit at most, so a value may land one BF16 step from libtorch's and
// almost all must be equal.
#include "jobs/eval/cpu/bf16_silu_mul.h"

#include <gtest/gtest.h>

#include <limits>

#include "jobs/eval/cpu/bf16_linear.h"
#include "tests/eval/cpu/bf16_kernel_test.h"
#include "tests/eval/tensor_test_util.h"

namespace ferry::eval {
namespace {

using testing::bf16_randn;

using Bf16SiluMulTest = testing::Bf16KernelTest;

TEST_F(Bf16SiluMulTest, MatchesLibtorchsTwoOpsAndFloat64) {
  // A decode step's row, a verify's block (split over threads), the tiny models' width.
  for (const auto& [rows, width] : std::vector<std::pair<int64_t, int64_t>>{{1, 4096}, {16, 4096}, {3, 48}}) {
    at::Tensor gate = (bf16_randn(rows, width, 3 + rows) * 4).to(at::kBFloat16);
    const at::Tensor up = (bf16_randn(rows, width, 9 + rows) * 2).to(at::kBFloat16);
    // Both tails of silu: e^-x overflows below -88 (silu -> -0) and vanishes above 88.
    gate.view({-1}).narrow(0, 0, 4).copy_(at::tensor({-100.0f, -20.0f, 20.0f, 100.0f}).to(at::kBFloat16));
    ASSERT_TRUE(bf16_silu_mul_applies(gate, up));
    const at::Tensor want = at::silu(gate) * up;
    const at::Tensor g64 = gate.to(at::kDouble);
    const at::Tensor ref = g64 / (1.0 + at::exp(-g64)) * up.to(at::kDouble);
    at::Tensor got = gate.clone();
    bf16_silu_mul_(got, up);
    const at::Tensor g = got.to(at::kFloat), l = want.to(at::kFloat);
    EXPECT_TRUE(at::all((g - l).abs() <= l.abs() * (1.0 / 128) + 1e-30).item<bool>()) << rows;
    EXPECT_GT(at::eq(g, l).to(at::kFloat).mean().item<double>(), 0.99) << rows;
    // Four BF16 roundings (e^-x, 1 + e^-x, the quotient, the product) from float64's value.
    EXPECT_TRUE(at::all((got.to(at::kDouble) - ref).abs() <= ref.abs() * (4.5 / 256) + 1e-30).item<bool>()) << rows;
    EXPECT_EQ(got[0][0].item<float>(), 0.0f);  // silu(-100) = -0 in float32
    EXPECT_EQ(got[0][3].item<float>(), want[0][3].item<float>());  // silu(100) = 100
  }
}

TEST_F(Bf16SiluMulTest, LeavesOtherInputsToLibtorch) {
  const at::Tensor x = bf16_randn(4, 64, 1);
  EXPECT_FALSE(bf16_silu_mul_applies(x.to(at::kFloat), x.to(at::kFloat)));  // float32
  EXPECT_FALSE(bf16_silu_mul_applies(x.narrow(1, 0, 48), x.narrow(1, 0, 48)));  // not contiguous
  const at::Tensor odd = x.view({-1}).narrow(0, 0, 40).contiguous();
  EXPECT_FALSE(bf16_silu_mul_applies(odd, odd));  // 40 values, not a multiple of 16
  EXPECT_FALSE(bf16_silu_mul_applies(x, x.view({2, 128})));  // shapes differ
  set_bf16_kernel_enabled(false);
  EXPECT_FALSE(bf16_silu_mul_applies(x, x));
  set_bf16_kernel_enabled(true);
}

}  // namespace
}  // namespace ferry::eval
