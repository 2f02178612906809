// The repacked-weight BF16 kernel against a float64 product of the same BF16 inputs, for
// every tile height (1..16 rows, and more rows than one tile), depths with an odd
// number of pairs, widths not a multiple of a thread's chunk; the layout itself; and
// the weights it must leave alone (project() still right for them).
#include "jobs/eval/cpu/packed_bf16_linear.h"

#include <gtest/gtest.h>

#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/tensor_ops.h"
#include "tests/eval/cpu/bf16_kernel_test.h"
#include "tests/eval/tensor_test_util.h"

namespace ferry::eval {
namespace {

using testing::bf16_randn;
using testing::relative_error;

using PackedBf16LinearTest = testing::Bf16KernelTest;

at::Tensor float64_product(const at::Tensor& x, const at::Tensor& w) {
  return at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
}

TEST_F(PackedBf16LinearTest, MatchesAFloat64ProductForEveryTileHeight) {
  // K: model widths, an odd number of pairs (17, 513), the smallest (one pair).
  // N: one panel, one thread chunk (48), neither (80), many chunks and a partial one.
  for (int64_t k : {1024, 4096, 34, 1026, 2}) {
    for (int64_t n : {16, 48, 80, 1040}) {
      const at::Tensor w = bf16_randn(n, k, 7 * n + k);
      ASSERT_TRUE(bf16_weight_packable(w));
      const at::Tensor packed = pack_bf16_weight(w);
      ASSERT_TRUE(is_packed_bf16_weight(packed));
      for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 33}) {
        const at::Tensor x = bf16_randn(m, k, 1 + m + k);
        const at::Tensor got = packed_bf16_linear(x, packed);
        ASSERT_EQ(got.scalar_type(), at::kBFloat16);
        ASSERT_EQ(got.sizes(), (std::vector<int64_t>{m, n}));
        // One rounding to BF16 (8 significant bits) on top of float32 sums.
        EXPECT_LT(relative_error(got.to(at::kDouble), float64_product(x, w)), 8e-3)
            << "m " << m << " n " << n << " k " << k;
      }
    }
  }
}

TEST_F(PackedBf16LinearTest, LayoutPutsSixteenColumnsPairsSideBySide) {
  const at::Tensor w = at::arange(32 * 6, at::kFloat).view({32, 6}).to(at::kBFloat16);  // exact in BF16
  const at::Tensor p = pack_bf16_weight(w);
  ASSERT_EQ(p.sizes(), (std::vector<int64_t>{2, 3, 32}));
  for (int64_t panel = 0; panel < 2; ++panel) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t c = 0; c < 16; ++c) {
        for (int64_t e = 0; e < 2; ++e) {
          ASSERT_EQ(p[panel][j][2 * c + e].item<float>(), static_cast<float>((16 * panel + c) * 6 + 2 * j + e));
        }
      }
    }
  }
}

// Several weights in one parallel region: each output equals its own call's, bit for
// bit (the same sums in the same order), whichever thread took which chunk; project_all
// leaves weights that are not packed (or of another K) to project().
TEST_F(PackedBf16LinearTest, SeveralWeightsInOneRegionGiveEachWeightsOwnProduct) {
  const int64_t k = 1024;
  const std::vector<at::Tensor> w = {bf16_randn(2048, k, 1), bf16_randn(16, k, 2), bf16_randn(1040, k, 3)};
  std::vector<at::Tensor> packed;
  for (const at::Tensor& m : w) packed.push_back(pack_bf16_weight(m));
  const at::Tensor unpacked = bf16_randn(40, k, 4);  // 40 rows: not packable
  const at::Tensor other_k = pack_bf16_weight(bf16_randn(32, 512, 5));
  for (int64_t m : {1, 16, 17}) {
    const at::Tensor x = bf16_randn(m, k, 10 + m);
    const std::vector<at::Tensor> all = packed_bf16_linear_all(x, packed);
    ASSERT_EQ(all.size(), packed.size());
    for (size_t i = 0; i < packed.size(); ++i) {
      EXPECT_TRUE(at::equal(all[i], packed_bf16_linear(x, packed[i]))) << "weight " << i << " m " << m;
    }
    const std::vector<at::Tensor> mixed = project_all(x, {packed[0], unpacked, packed[2]});
    EXPECT_TRUE(at::equal(mixed[0], all[0]));
    EXPECT_TRUE(at::equal(mixed[1], project(x, unpacked)));
    EXPECT_TRUE(at::equal(mixed[2], all[2]));
    const at::Tensor x512 = bf16_randn(m, 512, 20 + m);
    EXPECT_THROW(packed_bf16_linear_all(x512, {other_k, packed[0]}), c10::Error);  // every K must be x's
  }
}

TEST_F(PackedBf16LinearTest, ProjectTakesBatchedRowsThroughThePackedWeight) {
  const at::Tensor w = bf16_randn(32, 64, 3), packed = pack_bf16_weight(w);
  const at::Tensor x = at::randn({2, 3, 64}).to(at::kBFloat16);
  const at::Tensor got = project(x, packed);
  ASSERT_EQ(got.sizes(), (std::vector<int64_t>{2, 3, 32}));
  EXPECT_LT(relative_error(got.view({6, 32}).to(at::kDouble), float64_product(x.view({6, 64}), w)), 8e-3);
}

TEST_F(PackedBf16LinearTest, AnyRowCountPacksWithItsLastPanelPaddedWithZeros) {
  // An output head whose vocabulary is not a multiple of 16 (WeightLoader::take_lm_head):
  // the product has whole panels of columns, the ones past N exactly 0, and
  // project_columns() hands back the first N.
  for (int64_t n : {1, 17, 1000}) {
    const at::Tensor w = bf16_randn(n, 1024, 11 * n);
    EXPECT_FALSE(bf16_weight_packable(w));  // not without asking for the padding
    ASSERT_TRUE(bf16_weight_packable(w, /*padded=*/true));
    const at::Tensor packed = pack_bf16_weight(w);
    ASSERT_EQ(packed.size(0), (n + 15) / 16);
    for (int64_t m : {1, 15, 16}) {
      const at::Tensor x = bf16_randn(m, 1024, 3 + m);
      const at::Tensor wide = project(x, packed);
      ASSERT_EQ(wide.size(1), packed.size(0) * 16);
      EXPECT_TRUE(wide.narrow(1, n, wide.size(1) - n).eq(0).all().item<bool>()) << "n " << n << " m " << m;
      const at::Tensor got = project_columns(x, packed, n);
      ASSERT_EQ(got.sizes(), (std::vector<int64_t>{m, n}));
      EXPECT_LT(relative_error(got.to(at::kDouble), float64_product(x, w)), 8e-3) << "n " << n << " m " << m;
    }
  }
}

TEST_F(PackedBf16LinearTest, LeavesOtherWeightsToTheUnpackedPaths) {
  // Not packed: N not a multiple of a panel, odd K, float32, a transposed view, and
  // anything while the kernel is switched off. project() stays right for each.
  const at::Tensor ragged = bf16_randn(1000, 64, 1), odd = bf16_randn(32, 63, 2);
  EXPECT_FALSE(bf16_weight_packable(ragged));
  EXPECT_FALSE(bf16_weight_packable(odd));
  EXPECT_FALSE(bf16_weight_packable(bf16_randn(32, 64, 3).to(at::kFloat)));
  EXPECT_FALSE(bf16_weight_packable(bf16_randn(64, 32, 3).t()));
  EXPECT_FALSE(is_packed_bf16_weight(ragged));
  set_bf16_kernel_enabled(false);
  EXPECT_FALSE(bf16_weight_packable(bf16_randn(32, 64, 3)));
  set_bf16_kernel_enabled(true);
  for (int64_t m : {1, 16}) {
    for (const at::Tensor& w : {ragged, odd}) {
      const at::Tensor x = bf16_randn(m, w.size(1), 5 + m);
      EXPECT_LT(relative_error(project(x, w).to(at::kDouble), float64_product(x, w)), 8e-3);
    }
  }
}

}  // namespace
}  // namespace ferry::eval
