// The torch-free parts of issue 43's eval figures: the sampling rule (token_sampler.h)
// against this file's own re-implementation and hand-worked cases, τ's spread
// (tau_spread.h) on values whose figures are worked out by hand below, the drafted /
// accepted counts finish_decode_run derives, the CPU-contention figures and warning, and the regime's
// names. The expected numbers are computed here by hand (comments show the working).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "jobs/eval/run/cpu_contention.h"
#include "jobs/eval/run/eval_report.h"
#include "jobs/eval/run/eval_spec.h"
#include "jobs/eval/run/tau_spread.h"
#include "jobs/eval/run/token_sampler.h"

namespace ferry::eval {
namespace {

// Written from the definition (Steele, Lea & Flood; Vigna's splitmix64.c), not the engine's.
uint64_t reference_splitmix64_next(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

TEST(TokenSamplerTest, Splitmix64IsTheStandardFinalizer) {
  // The generator's first outputs from seed 0 (states γ, 2γ), as published with splitmix64.c.
  EXPECT_EQ(splitmix64(0x9E3779B97F4A7C15ULL), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(splitmix64(0x9E3779B97F4A7C15ULL * 2), 0x6E789E6AA1B965F4ULL);
  uint64_t state = 12345;
  for (int i = 0; i < 100; ++i) {
    const uint64_t next_state = state + 0x9E3779B97F4A7C15ULL;
    EXPECT_EQ(splitmix64(next_state), reference_splitmix64_next(&state));
  }
}

TEST(TokenSamplerTest, TheUniformIsTheIssuesFormula) {
  for (uint64_t seed : {0ULL, 7ULL, 0xFFFFFFFFFFFFFFFFULL}) {
    for (uint64_t r : {0ULL, 1ULL, 5ULL, 70000ULL}) {
      for (uint64_t p : {0ULL, 1ULL, 15ULL, 4095ULL}) {
        // seed + 0x9E37... * (r * 2^32 + p + 1), mod 2^64; then >> 11, times 2^-53.
        uint64_t state = seed + 0x9E3779B97F4A7C15ULL * (r * 4294967296ULL + p + 1) - 0x9E3779B97F4A7C15ULL;
        const double want = std::ldexp(static_cast<double>(reference_splitmix64_next(&state) >> 11), -53);
        EXPECT_EQ(sampling_uniform(seed, r, p), want) << seed << " " << r << " " << p;
        EXPECT_GE(want, 0.0);
        EXPECT_LT(want, 1.0);
      }
    }
  }
  EXPECT_NE(sampling_uniform(7, 0, 1), sampling_uniform(7, 1, 0));
  EXPECT_NE(sampling_uniform(7, 0, 0), sampling_uniform(8, 0, 0));
}

TEST(TokenSamplerTest, TheTokenIsTheFirstWhoseCumulativeWeightPassesUTimesTheTotal) {
  // logits {0, ln 3} at T = 1: weights exp(l - max) = {1/3, 1}, total 4/3; id 0 holds
  // the first quarter of [0, 1).
  const float two[] = {0.0f, static_cast<float>(std::log(3.0))};
  EXPECT_EQ(sample_token(two, 2, 1.0, 0.0), 0);
  EXPECT_EQ(sample_token(two, 2, 1.0, 0.2), 0);
  EXPECT_EQ(sample_token(two, 2, 1.0, 0.26), 1);
  EXPECT_EQ(sample_token(two, 2, 1.0, 0.999999), 1);
  // At T = 0.5 the weights square: {1/9, 1}, id 0 holds the first tenth.
  EXPECT_EQ(sample_token(two, 2, 0.5, 0.09), 0);
  EXPECT_EQ(sample_token(two, 2, 0.5, 0.11), 1);
  // Equal logits: four equal quarters; ties go to the smaller id only below each bound.
  const float flat[] = {2.5f, 2.5f, 2.5f, 2.5f};
  EXPECT_EQ(sample_token(flat, 4, 1.0, 0.0), 0);
  EXPECT_EQ(sample_token(flat, 4, 1.0, 0.24), 0);
  EXPECT_EQ(sample_token(flat, 4, 1.0, 0.25), 1);  // cumulative 1 does not exceed 0.25 × 4 = 1
  EXPECT_EQ(sample_token(flat, 4, 1.0, 0.74), 2);
  EXPECT_EQ(sample_token(flat, 4, 1.0, 0.75), 3);
  // A far lower logit never wins at a low temperature, and large logits do not overflow.
  const float big[] = {1000.0f, 1.0f, 999.0f};
  EXPECT_EQ(sample_token(big, 3, 0.01, 0.999), 0);
  EXPECT_EQ(sample_token(big, 3, 1.0, 0.99), 2);  // weights {1, e^-999, e^-1}: id 2 holds the last 26.9 %
}

TEST(TokenSamplerTest, TheRegimeIsNamedForTheReport) {
  EXPECT_EQ((Sampling{}).regime(), "greedy");
  EXPECT_EQ((Sampling{1.0, 7}).regime(), "T = 1.0, seed 7");
  EXPECT_EQ((Sampling{0.7, 0}).regime(), "T = 0.7, seed 0");
  EXPECT_EQ((Sampling{2, 18446744073709551615ULL}).regime(), "T = 2.0, seed 18446744073709551615");
}

TEST(TauSpreadTest, FiguresWorkedOutByHand) {
  // {4, 1, 3, 2}: mean 2.5; squared deviations 2.25 + 2.25 + 0.25 + 0.25 = 5, / (n - 1 = 3).
  const TauSpread s = tau_spread({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.sd, std::sqrt(5.0 / 3.0));
  // Sorted {1, 2, 3, 4}; rank p × 3: p10 at 0.3 → 1.3, p50 at 1.5 → 2.5, p90 at 2.7 → 3.7.
  EXPECT_DOUBLE_EQ(s.p10, 1.3);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);
  EXPECT_DOUBLE_EQ(s.p90, 3.7);
  EXPECT_LT(s.ci95_low, 2.5);
  EXPECT_GT(s.ci95_high, 2.5);
  EXPECT_GE(s.ci95_low, 1.0);
  EXPECT_LE(s.ci95_high, 4.0);

  const TauSpread same = tau_spread({2, 2, 2});
  EXPECT_EQ(same.sd, 0);
  EXPECT_EQ(same.ci95_low, 2);
  EXPECT_EQ(same.ci95_high, 2);
  const TauSpread one = tau_spread({5.5});
  EXPECT_EQ(one.sd, 0);
  EXPECT_EQ(one.p10, 5.5);
  EXPECT_EQ(one.p90, 5.5);
  EXPECT_EQ(one.ci95_low, 5.5);
  const TauSpread none = tau_spread({});
  EXPECT_EQ(none.sd, 0);
  EXPECT_EQ(none.ci95_high, 0);
}

// The bootstrap as tau_spread.h states it, written again here.
std::pair<double, double> reference_bootstrap(const std::vector<double>& v) {
  std::vector<double> means;
  uint64_t k = 0;
  for (int b = 0; b < 2000; ++b) {
    double sum = 0;
    for (size_t i = 0; i < v.size(); ++i, ++k) {
      uint64_t state = 43 + 0x9E3779B97F4A7C15ULL * (k + 1) - 0x9E3779B97F4A7C15ULL;
      const double u = std::ldexp(static_cast<double>(reference_splitmix64_next(&state) >> 11), -53);
      sum += v[static_cast<size_t>(u * static_cast<double>(v.size()))];
    }
    means.push_back(sum / static_cast<double>(v.size()));
  }
  std::sort(means.begin(), means.end());
  auto at = [&](double p) {
    const double rank = p * 1999;
    const size_t lo = static_cast<size_t>(rank);
    return means[lo] + (rank - static_cast<double>(lo)) * (means[lo + 1] - means[lo]);
  };
  return {at(0.025), at(0.975)};
}

TEST(TauSpreadTest, TheBootstrapIsTheStatedMethodAndNearTheNormalInterval) {
  std::vector<double> v;
  for (int i = 0; i < 100; ++i) v.push_back(1 + (i * 37 % 100) / 10.0);  // 1.0 .. 10.9, shuffled
  const TauSpread s = tau_spread(v);
  const auto [low, high] = reference_bootstrap(v);
  EXPECT_EQ(s.ci95_low, low);
  EXPECT_EQ(s.ci95_high, high);
  // Mean 5.95, sd of the mean ≈ 2.901 / 10: the normal interval 5.95 ± 0.569.
  EXPECT_NEAR(s.ci95_low, 5.95 - 0.569, 0.12);
  EXPECT_NEAR(s.ci95_high, 5.95 + 0.569, 0.12);
  EXPECT_EQ(tau_spread(v).ci95_low, s.ci95_low);  // fixed seed: the same every time
}

TEST(DecodeRunCountsTest, DraftedAndAcceptedTokensFromTheStepCounts) {
  DecodeRun run;
  run.label = "candidate";
  run.block_size = 4;
  run.steps = 5;
  run.accepted_at = {5, 3, 2, 1};  // slot 1 accepted in 3 steps, slot 2 in 2, slot 3 in 1
  run.response_taus = {4, 1, 3, 2};
  run.responses = 4;
  run.cpu_capacity_seconds = 4;
  run.contending_cpu_seconds = 1;
  finish_decode_run(&run);
  EXPECT_EQ(run.drafted_tokens, 15);  // 5 steps × 3 drafts
  EXPECT_EQ(run.accepted_tokens, 6);  // 3 + 2 + 1
  EXPECT_DOUBLE_EQ(run.overall_acceptance_rate, 0.4);
  EXPECT_DOUBLE_EQ(run.tau_spread.p90, 3.7);
  EXPECT_DOUBLE_EQ(run.cpu_contention, 0.25);
  auto warning = cpu_contention_warning(run);
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->find("took 25 % of the candidate pass's threads' time"), std::string::npos) << *warning;
  EXPECT_NE(warning->find("speedup is not reliable"), std::string::npos) << *warning;
  run.contending_cpu_seconds = 0.9;
  finish_decode_run(&run);
  EXPECT_FALSE(cpu_contention_warning(run).has_value());
  run.cpu_capacity_seconds = 0.2, run.contending_cpu_seconds = 0.09;  // 45 %, but within /proc/stat's ticks
  finish_decode_run(&run);
  EXPECT_FALSE(cpu_contention_warning(run).has_value());
  run.cpu_capacity_seconds = 0;  // not measured (an older report): no warning
  finish_decode_run(&run);
  EXPECT_FALSE(cpu_contention_warning(run).has_value());

  DecodeRun plain;  // block 1 drafts nothing
  plain.steps = 9;
  plain.accepted_at = {9};
  finish_decode_run(&plain);
  EXPECT_EQ(plain.drafted_tokens, 0);
  EXPECT_EQ(plain.overall_acceptance_rate, 0);
}

// The contention counts what other processes took, not what the eval left unused:
// a tiny model's pass whose 2 threads idle most of the time on an otherwise quiet
// 2-core machine is not contended (a share of own CPU over wall × threads, 15 % here,
// would have warned), and others' CPU that fits in the cores the eval leaves free
// takes nothing from it. Figures worked by hand.
TEST(CpuContentionTest, OnlyWhatOthersTookPastTheFreeCoresCounts) {
  // busy 0.3 s, own 0.3 s, wall 1 s, 2 cores, 2 threads: nobody else ran.
  EXPECT_DOUBLE_EQ(contending_seconds(0.3, 0.3, 1.0, 2, 2), 0);
  // busy 1.3 s, own 0.3: others took 1.0 s of the eval's 2 cores.
  EXPECT_DOUBLE_EQ(contending_seconds(1.3, 0.3, 1.0, 2, 2), 1.0);
  // The same on 4 cores with 2 threads: the 2 free cores hold it.
  EXPECT_DOUBLE_EQ(contending_seconds(1.3, 0.3, 1.0, 4, 2), 0);
  // 3.3 s of others on 4 cores, 2 threads: 1.3 s past the free cores' 2.0.
  EXPECT_DOUBLE_EQ(contending_seconds(3.6, 0.3, 1.0, 4, 2), 1.3);
  // /proc/stat's ticks can put the machine below this process: never negative.
  EXPECT_DOUBLE_EQ(contending_seconds(0.29, 0.3, 1.0, 2, 2), 0);
}

// The meter against real competitors: one child per core spins for 0.4 s of its own
// CPU while this process waits in waitpid (no CPU), as the eval's threads would wait
// for cores. Every core's worth of it is contention for a pass on every core.
TEST(CpuContentionTest, ProcessesSpinningOnEveryCoreAreMeasuredAsContention) {
  const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  ASSERT_GT(cores, 0);
  constexpr double kSpin = 0.4;
  const CpuContentionMeter meter;
  std::vector<pid_t> children;
  for (int i = 0; i < cores; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      timespec t{};
      do clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
      while (static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9 < kSpin);
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  const CpuContention c = meter.finish(cores);
  // The children's cores × 0.4 s (less /proc/stat's tick rounding) at least; other
  // load on the machine only adds.
  EXPECT_GE(c.contending_seconds, 0.8 * cores * kSpin) << "capacity " << c.capacity_seconds;
  EXPECT_GE(c.capacity_seconds, cores * kSpin);
  DecodeRun run;
  run.label = "baseline";
  run.cpu_seconds = c.own_seconds;
  run.cpu_capacity_seconds = c.capacity_seconds;
  run.contending_cpu_seconds = c.contending_seconds;
  finish_decode_run(&run);
  EXPECT_TRUE(cpu_contention_warning(run).has_value()) << run.cpu_contention;
}

TEST(DecodeRunCountsTest, TheReportNamesTheRegimeAndTheCounts) {
  EvalReport r;
  r.candidate.label = "candidate";
  r.candidate.block_size = 4;
  r.candidate.steps = 5;
  r.candidate.accepted_at = {5, 3, 2, 1};
  r.candidate.response_taus = {4, 1, 3, 2};
  r.candidate.responses = 4;
  finish_decode_run(&r.candidate);
  EXPECT_EQ(r.to_json()["sampling"], "greedy");
  EXPECT_FALSE(r.to_json().contains("temperature"));  // a greedy report has no new keys but these
  EXPECT_NE(r.to_text().find("decoding greedy\n"), std::string::npos);
  r.sampling = Sampling{1.0, 7};
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j["sampling"], "T = 1.0, seed 7");
  EXPECT_EQ(j["temperature"], 1.0);
  EXPECT_EQ(j["seed"], 7);
  EXPECT_EQ(j["candidate"]["drafted_tokens"], 15);
  EXPECT_EQ(j["candidate"]["accepted_tokens"], 6);
  EXPECT_EQ(j["candidate"]["overall_acceptance_rate"], 0.4);
  EXPECT_EQ(j["candidate"]["tau_spread"]["p50"], 2.5);
  EXPECT_EQ(j["metrics"]["acceptance_rate"], 0.4);
  EXPECT_EQ(j["metrics"]["temperature"], 1.0);
  const std::string text = r.to_text();
  EXPECT_NE(text.find("decoding T = 1.0, seed 7 (the target's tokens sampled"), std::string::npos) << text;
  EXPECT_NE(text.find("drafted 15 tokens, accepted 6, acceptance rate 0.400"), std::string::npos) << text;
  EXPECT_NE(text.find("sd 1.291, p10 1.300, p50 2.500, p90 3.700"), std::string::npos) << text;
}

TEST(EvalSpecSamplingTest, TemperatureAndSeedTravelAndAGreedySpecIsWhatItWas) {
  EvalSpec greedy;
  greedy.target = "t";
  const nlohmann::json g = eval_spec_json(greedy);
  EXPECT_FALSE(g.contains("temperature"));
  EXPECT_FALSE(g.contains("seed"));
  EvalSpec sampled = greedy;
  sampled.temperature = 0.7;
  sampled.seed = 18446744073709551615ULL;
  auto back = eval_spec_from_json(eval_spec_json(sampled));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->temperature, 0.7);
  EXPECT_EQ(back->seed, 18446744073709551615ULL);
  for (const char* bad :
       {R"({"temperature": -1})", R"({"temperature": 1000})", R"({"temperature": "hot"})", R"({"seed": 1.5})"}) {
    auto r = eval_spec_from_json(nlohmann::json::parse(bad));
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(bad[2] == 't' ? "temperature" : "seed"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace ferry::eval
