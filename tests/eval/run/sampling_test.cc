// Sampling at T > 0 (issue 43) on the tiny families (Qwen3 dense and the Qwen3.5
// hybrid): the engine's tokens against an independent double-precision
// re-implementation of the rule written here (its own splitmix64, uniform and
// cumulative sum, run by full recompute through a fresh cache every token), plain and
// speculative decoding equal for the same seed, a sharded sampled eval merged equal to
// the whole, the same seed twice the same report and another seed other tokens.
#include <ATen/Parallel.h>

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "jobs/eval/models/dflash_drafter.h"
#include "jobs/eval/run/eval_report_json.h"
#include "jobs/eval/run/eval_runner.h"
#include "jobs/eval/run/shard_merge.h"
#include "jobs/eval/run/speculative_decoder.h"
#include "tests/eval/eval_test_util.h"
#include "tests/eval/model_suite.h"

namespace ferry::eval {
namespace {

constexpr int kMaxNew = 20;

// The rule, written from its text: u = (splitmix64(seed + γ (r 2^32 + p + 1)) >> 11) 2^-53.
double reference_uniform(uint64_t seed, uint64_t r, uint64_t p) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * ((r << 32) + p + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return std::ldexp(static_cast<double>(z >> 11), -53);
}

// The smallest id whose float64 cumulative sum of exp((l - max) / T) exceeds u × total.
int64_t reference_sample(const std::vector<double>& logits, double temperature, double u) {
  double max = -INFINITY;
  for (double l : logits) max = std::max(max, l);
  std::vector<double> cumulative;
  double sum = 0;
  for (double l : logits) cumulative.push_back(sum += std::exp((l - max) / temperature));
  for (size_t i = 0; i < cumulative.size(); ++i) {
    if (cumulative[i] > u * sum) return static_cast<int64_t>(i);
  }
  ADD_FAILURE() << "no id passed u × total";
  return -1;
}

// Plain sampled decoding by full recompute: the whole sequence through a fresh cache per token.
std::vector<int64_t> reference_decode(TargetModel* t, const std::vector<int64_t>& prompt, uint64_t r, uint64_t seed,
                                      double temperature) {
  std::vector<int64_t> seq = prompt, out;
  for (int p = 0; p < kMaxNew; ++p) {
    t->reset();
    at::Tensor row = t->forward(at::tensor(seq, at::kLong), {}, 1).logits.to(at::kDouble).reshape({-1});
    std::vector<double> logits(row.data_ptr<double>(), row.data_ptr<double>() + row.numel());
    const int64_t next = reference_sample(logits, temperature, reference_uniform(seed, r, p));
    out.push_back(next);
    seq.push_back(next);
  }
  return out;
}

class SamplingTest : public testing::ModelSuiteTest<SamplingTest> {
 public:
  static void write_models() {
    at::set_num_threads(1);
    ASSERT_TRUE(testing::write_decoding_models(dir_->path()).ok());
    ASSERT_TRUE(write_tiny_prompts(*dir_ / "prompts.jsonl", 7, 63, 4, 12, 5).ok());
  }

 protected:
  static EvalSpec spec(double temperature, uint64_t seed) {
    EvalSpec s;
    s.target = *dir_ / "oracle-mixed";
    s.drafter = *dir_ / "agree";
    s.reference = *dir_ / "disagree";
    s.prompts = *dir_ / "prompts.jsonl";
    s.max_new_tokens = 24;
    s.threads = 1;
    s.temperature = temperature;
    s.seed = seed;
    return s;
  }
};

std::vector<std::vector<int64_t>> response_ids(const EvalReport& r) {
  std::vector<std::vector<int64_t>> ids;
  for (const auto& x : r.responses) ids.push_back(x.ids);
  return ids;
}

TEST_F(SamplingTest, TokensAreTheIndependentRulesPlainAndSpeculativeOnBothFamilies) {
  struct Pair {
    std::string target, drafter;
    int64_t vocab;
  };
  const std::vector<Pair> pairs = {{"random", "random-drafter", 320},
                                   {"oracle-mixed", "agree", 64},
                                   {"hybrid-random", "random-drafter", 320},
                                   {"hybrid-mixed", "hybrid-agree", 64}};
  for (const Pair& pair : pairs) {
    auto target = load_target(*dir_ / pair.target, {}, nullptr);
    ASSERT_TRUE(target.ok()) << target.status().message();
    auto drafter = DFlashDrafter::load(*dir_ / pair.drafter, (*target)->config().hidden_size, {}, nullptr);
    ASSERT_TRUE(drafter.ok()) << drafter.status().message();
    auto proposer = DFlashProposer::create(target->get(), drafter->get());
    ASSERT_TRUE(proposer.ok());
    const auto prompts = testing::make_prompts(3, pair.vocab, 3, 10, 77);
    int64_t accepted = 0, differing_from_greedy = 0;
    for (double temperature : {0.7, 1.0}) {
      for (uint64_t seed : {1ULL, 7ULL, 2026ULL}) {
        for (size_t r = 0; r < prompts.size(); ++r) {
          SCOPED_TRACE(pair.target + " T " + std::to_string(temperature) + " seed " + std::to_string(seed) +
                       " response " + std::to_string(r));
          const auto want = reference_decode(target->get(), prompts[r], r, seed, temperature);
          DecodeOptions o;
          o.max_new_tokens = kMaxNew;
          o.sampling = Sampling{temperature, seed};
          o.response_index = r;
          o.block_size = 1;
          auto plain = speculative_decode(target->get(), nullptr, prompts[r], o);
          ASSERT_TRUE(plain.ok()) << plain.status().message();
          EXPECT_EQ(plain->tokens, want);
          o.block_size = 16;
          o.capture_layers = (*drafter)->config().target_layer_ids;
          auto spec = speculative_decode(target->get(), proposer->get(), prompts[r], o);
          ASSERT_TRUE(spec.ok()) << spec.status().message();
          EXPECT_EQ(spec->tokens, want);
          for (int64_t a : spec->acceptance_lengths) accepted += a - 1;
          DecodeOptions greedy = o;
          greedy.sampling = Sampling{};
          auto g = speculative_decode(target->get(), proposer->get(), prompts[r], greedy);
          ASSERT_TRUE(g.ok());
          differing_from_greedy += g->tokens != want ? 1 : 0;
        }
      }
    }
    // The rule was exercised: on the random targets (flat logits) sampling chose other
    // tokens than the argmax; on the oracle pairs (peaked) verification accepted drafts.
    if (pair.drafter == "random-drafter") {
      EXPECT_GT(differing_from_greedy, 0) << pair.target;
    } else {
      EXPECT_GT(accepted, 0) << pair.target;
    }
  }
}

TEST_F(SamplingTest, TheSameSeedGivesTheSameReportAndAnotherSeedOtherTokens) {
  const EvalReport a = eval_ok(spec(1.0, 7));
  const EvalReport b = eval_ok(spec(1.0, 7));
  const EvalReport c = eval_ok(spec(1.0, 8));
  ASSERT_EQ(a.responses.size(), 7u);
  EXPECT_EQ(response_ids(a), response_ids(b));
  EXPECT_EQ(a.candidate.response_taus, b.candidate.response_taus);
  EXPECT_EQ(a.candidate.accepted_at, b.candidate.accepted_at);
  EXPECT_EQ(a.reference_run->response_taus, b.reference_run->response_taus);
  EXPECT_EQ(a.candidate.tau_spread.ci95_low, b.candidate.tau_spread.ci95_low);
  EXPECT_EQ(a.to_json()["responses"], b.to_json()["responses"]);
  EXPECT_NE(response_ids(a), response_ids(c));
  // Lossless: the drafters' runs give the baseline's sampled tokens.
  EXPECT_EQ(a.candidate.responses_differing_from_baseline, 0);
  EXPECT_EQ(a.reference_run->responses_differing_from_baseline, 0);
  EXPECT_GT(a.candidate.accepted_tokens, 0);
  EXPECT_EQ(a.candidate.drafted_tokens, a.candidate.steps * 15);
  // The regime in the JSON (read back too) and the text.
  const nlohmann::json j = a.to_json();
  EXPECT_EQ(j["sampling"], "T = 1.0, seed 7");
  auto back = eval_report_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->sampling.regime(), "T = 1.0, seed 7");
  EXPECT_NE(a.to_text().find("decoding T = 1.0, seed 7"), std::string::npos);
  // Greedy is what it was: the greedy report's tokens are the sampled rule's argmax, unchanged.
  const EvalReport g = eval_ok(spec(0, 7));
  EXPECT_EQ(g.to_json()["sampling"], "greedy");
  EXPECT_FALSE(g.to_json().contains("temperature"));
  EXPECT_NE(response_ids(g), response_ids(a));
  EXPECT_EQ(response_ids(g), response_ids(eval_ok(spec(0, 12345))));  // the seed does nothing at T = 0
}

TEST_F(SamplingTest, ASampledShardedEvalMergesIntoTheWholeOne) {
  const EvalReport whole = eval_ok(spec(0.7, 3));
  std::vector<EvalReport> parts;
  for (int k = 0; k < 3; ++k) {
    EvalSpec s = spec(0.7, 3);
    s.shard_index = k;
    s.shard_count = 3;
    auto back = eval_report_from_json(nlohmann::json::parse(eval_ok(s).to_json().dump()));
    ASSERT_TRUE(back.ok()) << back.status().message();
    parts.push_back(*back);
  }
  auto merged = merge_shard_reports(parts, {}, std::nullopt, std::nullopt);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(response_ids(*merged), response_ids(whole));
  EXPECT_EQ(merged->candidate.response_taus, whole.candidate.response_taus);
  EXPECT_EQ(merged->candidate.tau, whole.candidate.tau);
  EXPECT_EQ(merged->sampling.regime(), "T = 0.7, seed 3");
  // Another seed in one part is refused, naming it.
  parts[1].sampling.seed = 4;
  auto mixed = merge_shard_reports(parts, {}, std::nullopt, std::nullopt);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("shard 2 of 3 decoded T = 0.7, seed 4"), std::string::npos)
      << mixed.status().message();
}

}  // namespace
}  // namespace ferry::eval
