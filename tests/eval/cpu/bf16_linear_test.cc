// The AVX512-BF16 matmul kernel against a float64 product of the same BF16 inputs, for
// row counts from a decode step to a verify block and widths with and without a
// 32-wide tail; and where it must not apply (libtorch keeps those).
#include "jobs/eval/cpu/bf16_linear.h"

#include <gtest/gtest.h>

#include "tests/eval/cpu/bf16_kernel_test.h"
#include "tests/eval/tensor_test_util.h"

namespace ferry::eval {
namespace {

using testing::bf16_randn;
using testing::relative_error;

using Bf16LinearTest = testing::Bf16KernelTest;

TEST_F(Bf16LinearTest, MatchesAFloat64ProductForDecodeAndVerifyShapes) {
  // K: whole 128-wide steps, 32-wide steps, and tails shorter than a vector.
  for (int64_t k : {4096, 1024, 96, 100, 7}) {
    for (int64_t m : {1, 2, 5, 8, 9, 16}) {
      for (int64_t n : {1, 3, 130, 257}) {
        at::Tensor x = bf16_randn(m, k, 1 + m + k), w = bf16_randn(n, k, 7 * n + k);
        at::Tensor got = bf16_linear(x, w);
        ASSERT_EQ(got.scalar_type(), at::kBFloat16);
        ASSERT_EQ(got.sizes(), (std::vector<int64_t>{m, n}));
        at::Tensor want = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
        // One rounding to BF16 (8 significant bits) on top of float32 sums.
        EXPECT_LT(relative_error(got.to(at::kDouble), want), 8e-3) << "m " << m << " n " << n << " k " << k;
      }
    }
  }
}

TEST_F(Bf16LinearTest, AgreesWithLibtorchOnAQwen3Projection) {
  at::Tensor x = bf16_randn(1, 1024, 3), w = bf16_randn(4096, 1024, 4);
  at::Tensor got = bf16_linear(x, w).to(at::kDouble), torch = at::linear(x, w).to(at::kDouble);
  EXPECT_LT(relative_error(got, torch), 8e-3);
  EXPECT_EQ(got.argmax().item<int64_t>(), torch.argmax().item<int64_t>());
}

TEST_F(Bf16LinearTest, AppliesOnlyToFewContiguousBf16Rows) {
  at::Tensor w = bf16_randn(64, 128, 5);
  EXPECT_TRUE(bf16_linear_applies(bf16_randn(1, 128, 6), w));
  // Blocks of rows only from kBf16LinearMinBlockDepth (below it oneDNN is faster).
  const int64_t deep = kBf16LinearMinBlockDepth;
  EXPECT_FALSE(bf16_linear_applies(bf16_randn(kBf16LinearMaxRows, 128, 6), w));
  EXPECT_TRUE(bf16_linear_applies(bf16_randn(kBf16LinearMaxRows, deep, 6), bf16_randn(8, deep, 5)));
  EXPECT_FALSE(bf16_linear_applies(bf16_randn(kBf16LinearMaxRows + 1, deep, 6), bf16_randn(8, deep, 5)));
  EXPECT_FALSE(bf16_linear_applies(bf16_randn(1, 128, 6).to(at::kFloat), w.to(at::kFloat)));
  EXPECT_FALSE(bf16_linear_applies(bf16_randn(128, 2, 6).t().narrow(0, 0, 1), w));  // every other value
  EXPECT_FALSE(bf16_linear_applies(bf16_randn(1, 128, 6), bf16_randn(128, 64, 5).t()));
  EXPECT_FALSE(bf16_linear_applies(bf16_randn(1, 127, 6), w));
  set_bf16_kernel_enabled(false);
  EXPECT_FALSE(bf16_linear_applies(bf16_randn(1, 128, 6), w));
  set_bf16_kernel_enabled(true);
}

}  // namespace
}  // namespace ferry::eval
