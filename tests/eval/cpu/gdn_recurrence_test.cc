// The gated delta rule's CPU recurrence against the rule computed here in float64,
// step by step from its definition: S <- decay S + k (beta (v - decay S^T k))^T,
// o = S^T q. Both of its paths: AVX-512 (d_v a multiple of 16, where the CPU has
// AVX512-BF16) and the scalar loop (any other d_v). The models' tests check it again
// inside the hybrid's layer, against the ATen form.
#include "jobs/eval/cpu/gdn_recurrence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace ferry::eval {
namespace {

struct Case {
  int64_t t, hv, dk, dv;
};

std::vector<float> uniform(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> out(n);
  for (float& x : out) x = d(gen);
  return out;
}

void check(const Case& c, bool with_outputs) {
  const size_t tk = c.t * c.hv * c.dk, tv = c.t * c.hv * c.dv, th = c.t * c.hv, sz = c.hv * c.dk * c.dv;
  const std::vector<float> q = uniform(tk, -0.5f, 0.5f, 1), k = uniform(tk, -0.5f, 0.5f, 2);
  const std::vector<float> v = uniform(tv, -1.0f, 1.0f, 3), decay = uniform(th, 0.5f, 1.0f, 4);
  const std::vector<float> beta = uniform(th, 0.0f, 1.0f, 5), initial = uniform(sz, -0.2f, 0.2f, 6);
  std::vector<float> state(sz, NAN), out(with_outputs ? tv : 0, NAN);
  const std::vector<float> initial_copy = initial;
  gdn_recurrence_cpu(with_outputs ? q.data() : nullptr, k.data(), v.data(), decay.data(), beta.data(),
                     initial.data(), state.data(), with_outputs ? out.data() : nullptr, c.t, c.hv, c.dk, c.dv);
  EXPECT_EQ(initial, initial_copy) << "the starting state is the rollback snapshot: never written";

  std::vector<double> s(initial.begin(), initial.end());
  double worst = 0;
  for (int64_t t = 0; t < c.t; ++t) {
    for (int64_t h = 0; h < c.hv; ++h) {
      const float* kt = &k[(t * c.hv + h) * c.dk];
      const float* qt = &q[(t * c.hv + h) * c.dk];
      const float* vt = &v[(t * c.hv + h) * c.dv];
      const double d = decay[t * c.hv + h], b = beta[t * c.hv + h];
      double* sh = &s[h * c.dk * c.dv];
      for (int64_t j = 0; j < c.dv; ++j) {
        double stk = 0;
        for (int64_t i = 0; i < c.dk; ++i) stk += sh[i * c.dv + j] * kt[i];
        const double delta = b * (vt[j] - d * stk);
        double o = 0;
        for (int64_t i = 0; i < c.dk; ++i) {
          sh[i * c.dv + j] = d * sh[i * c.dv + j] + kt[i] * delta;
          o += sh[i * c.dv + j] * qt[i];
        }
        if (with_outputs) worst = std::max(worst, std::abs(out[(t * c.hv + h) * c.dv + j] - o));
      }
    }
  }
  for (size_t i = 0; i < sz; ++i) worst = std::max(worst, std::abs(state[i] - s[i]));
  EXPECT_LT(worst, 1e-4) << "T=" << c.t << " Hv=" << c.hv << " dk=" << c.dk << " dv=" << c.dv;
}

TEST(GdnRecurrenceTest, MatchesTheRuleInFloat64OnTheVectorPath) {
  check({5, 3, 8, 32}, true);    // two 16-lane vectors per row
  check({3, 2, 16, 272}, true);  // past one 8-vector register block
  check({4, 3, 8, 32}, false);   // a replay: state only
}

TEST(GdnRecurrenceTest, MatchesTheRuleInFloat64OnTheScalarPath) {
  check({5, 3, 8, 12}, true);
  check({1, 1, 4, 1}, true);
}

TEST(GdnRecurrenceTest, NoStepsCopiesTheStartingState) {
  const std::vector<float> initial = uniform(2 * 4 * 16, -1, 1, 7);
  std::vector<float> state(initial.size(), NAN);
  gdn_recurrence_cpu(nullptr, nullptr, nullptr, nullptr, nullptr, initial.data(), state.data(), nullptr, 0, 2, 4, 16);
  EXPECT_EQ(state, initial);
}

TEST(GdnRecurrenceTest, ManyHeadsSplitOverThreadsGiveTheSameState) {
  check({8, 32, 128, 128}, true);  // 4 chunks of 8 heads (2^20 multiply-adds each) over the threads
}

}  // namespace
}  // namespace ferry::eval
