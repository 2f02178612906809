// The speculative loop: lossless against plain greedy decoding computed here by full
// recompute (an independent path), exact τ on constructed pairs whose answer is known
// from their construction (tiny_models' oracle target and agree/disagree drafters), and
// the loop's accounting through a fake drafter that proposes a chosen number of correct
// tokens per step.
#include "jobs/eval/run/speculative_decoder.h"

#include <ATen/Parallel.h>

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>

#include "jobs/eval/models/dflash_drafter.h"
#include "jobs/eval/models/qwen3_target.h"
#include "tests/eval/eval_test_util.h"
#include "tests/eval/model_suite.h"

namespace ferry::eval {
namespace {

using testing::ScratchDir;

constexpr int kPrompts = 20;
constexpr int kMaxNew = 32;

// Plain greedy by full recompute: the whole sequence through a fresh cache every token.
std::vector<int64_t> naive_greedy(TargetModel* t, const std::vector<int64_t>& prompt, int n,
                                  const std::vector<int64_t>& stops = {}) {
  std::vector<int64_t> seq = prompt, out;
  for (int i = 0; i < n; ++i) {
    t->reset();
    at::Tensor logits = t->forward(at::tensor(seq, at::kLong), {}, 1).logits;
    int64_t next = logits.argmax(-1).item<int64_t>();
    out.push_back(next);
    seq.push_back(next);
    if (std::find(stops.begin(), stops.end(), next) != stops.end()) break;
  }
  return out;
}

// Proposes the true continuation for the first k slots (k drawn per step) and a wrong
// token after, so the expected acceptance of each step is known: k + 1.
class CheatingDrafter : public Drafter {
 public:
  CheatingDrafter(std::vector<int64_t> truth, int64_t vocab, uint64_t seed)
      : truth_(std::move(truth)), vocab_(vocab), gen_(seed) {}
  void reset() override { context_rows_ = 0; }
  Result<std::vector<int64_t>> propose(const DraftRequest& r) override {
    // The loop must hand over exactly the positions not seen yet.
    context_rows_ += r.context.defined() ? r.context.size(0) : 0;
    if (context_rows_ != r.start) return internal_error("context rows " + std::to_string(context_rows_));
    if ((*r.tokens)[static_cast<size_t>(r.start)] != truth_[static_cast<size_t>(r.start)]) {
      return internal_error("bonus token is not the greedy one");
    }
    int64_t k = static_cast<int64_t>(gen_() % static_cast<uint64_t>(r.block_size));
    expected_.push_back(k + 1);
    std::vector<int64_t> out;
    for (int64_t j = 1; j < r.block_size; ++j) {
      int64_t want = truth_[static_cast<size_t>(r.start + j)];
      out.push_back(j <= k ? want : (want + 1) % vocab_);
    }
    return out;
  }
  std::vector<int64_t> expected_;

 private:
  std::vector<int64_t> truth_;
  int64_t vocab_;
  std::mt19937_64 gen_;
  int64_t context_rows_ = 0;
};

class SpeculativeDecoderTest : public testing::ModelSuiteTest<SpeculativeDecoderTest> {
 public:
  static void write_models() {
    at::set_num_threads(1);
    ASSERT_TRUE(testing::write_decoding_models(dir_->path()).ok());
  }

 protected:
  static std::unique_ptr<TargetModel> target(const std::string& name) {
    auto t = load_target(*dir_ / name, {}, nullptr);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return std::move(*t);
  }
  static std::unique_ptr<DFlashDrafter> drafter(const std::string& name, int64_t hidden) {
    auto d = DFlashDrafter::load(*dir_ / name, hidden, {}, nullptr);
    EXPECT_TRUE(d.ok()) << d.status().message();
    return std::move(*d);
  }
};

DecodeResult decode(TargetModel* t, Drafter* d, const std::vector<int64_t>& prompt, int64_t b,
                    const std::vector<int64_t>& capture, bool recompute = false) {
  DecodeOptions o;
  o.block_size = b;
  o.max_new_tokens = kMaxNew;
  o.capture_layers = capture;
  o.recompute = recompute;
  auto r = speculative_decode(t, d, prompt, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : DecodeResult();
}

int64_t count(const std::vector<int64_t>& v, int64_t x) { return std::count(v.begin(), v.end(), x); }

TEST_F(SpeculativeDecoderTest, LosslessWithNeverAlwaysAndSometimesAcceptedDrafters) {
  struct Pair {
    std::string target, drafter;
    int64_t vocab;
    int prompts;
  };
  const std::vector<Pair> pairs = {
      {"random", "random-drafter", 320, kPrompts},  // essentially never accepted
      {"oracle-const", "agree", 64, kPrompts},      // always
      {"oracle-const", "disagree", 64, kPrompts},   // never
      {"oracle-mixed", "agree", 64, kPrompts},      // sometimes
      {"hybrid-random", "random-drafter", 320, 6},
      {"hybrid-const", "hybrid-agree", 64, 6},
      {"hybrid-const", "hybrid-disagree", 64, 6},
      {"hybrid-mixed", "hybrid-agree", 64, 6},
  };
  for (const Pair& pair : pairs) {
    auto t = target(pair.target);
    auto d = drafter(pair.drafter, t->config().hidden_size);
    auto proposer = DFlashProposer::create(t.get(), d.get());
    ASSERT_TRUE(proposer.ok()) << proposer.status().message();
    const auto prompts = testing::make_prompts(pair.prompts, pair.vocab, 3, 20, 101);
    std::vector<int64_t> all_steps;
    for (const auto& p : prompts) {
      const std::vector<int64_t> want = naive_greedy(t.get(), p, kMaxNew);
      for (int64_t b : {1, 4, 16}) {
        DecodeResult r = decode(t.get(), b == 1 ? nullptr : proposer->get(), p, b, d->config().target_layer_ids);
        ASSERT_EQ(r.tokens, want) << pair.target << "+" << pair.drafter << " block " << b;
        if (b == 16) all_steps.insert(all_steps.end(), r.acceptance_lengths.begin(), r.acceptance_lengths.end());
      }
    }
    const int64_t full = count(all_steps, 16), none = count(all_steps, 1);
    const int64_t n = static_cast<int64_t>(all_steps.size());
    auto ends_with = [](const std::string& s, const std::string& tail) {
      return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends_with(pair.target, "const") && ends_with(pair.drafter, "-agree")) {
      EXPECT_EQ(full, n);
    }
    if (ends_with(pair.target, "const") && pair.drafter == "agree") {
      EXPECT_EQ(full, n);
    }
    if (ends_with(pair.drafter, "disagree")) {
      EXPECT_EQ(none, n);
    }
    if (ends_with(pair.target, "mixed")) {
      EXPECT_GT(full, 0);
      EXPECT_GT(none, 0);
    }
  }
}

TEST_F(SpeculativeDecoderTest, LosslessWithFakeDrafterAcceptingEveryPrefixLength) {
  auto t = target("random");
  const auto prompts = testing::make_prompts(kPrompts, 320, 3, 20, 202);
  int64_t steps = 0;
  for (int64_t b : {4, 16}) {
    for (size_t i = 0; i < prompts.size(); ++i) {
      const auto& p = prompts[i];
      std::vector<int64_t> truth = p;
      for (int64_t x : naive_greedy(t.get(), p, kMaxNew + static_cast<int>(b))) truth.push_back(x);
      CheatingDrafter fake(truth, 320, 1000 + i);
      DecodeResult r = decode(t.get(), &fake, p, b, {0});
      ASSERT_EQ(r.tokens, std::vector<int64_t>(truth.begin() + static_cast<long>(p.size()),
                                               truth.begin() + static_cast<long>(p.size()) + kMaxNew));
      // Accounting: τ per step, per-position acceptance, forward counts.
      EXPECT_EQ(r.acceptance_lengths, fake.expected_);
      for (int64_t j = 1; j < b; ++j) {
        int64_t want = 0;
        for (int64_t a : fake.expected_) want += a - 1 >= j ? 1 : 0;
        EXPECT_EQ(r.accepted_at[static_cast<size_t>(j)], want) << "slot " << j;
      }
      EXPECT_EQ(r.target_forwards, r.steps + 1);
      EXPECT_EQ(r.draft_forwards, r.steps);
      double mean = 0;
      for (int64_t a : fake.expected_) mean += static_cast<double>(a);
      EXPECT_DOUBLE_EQ(r.tau(), mean / static_cast<double>(fake.expected_.size()));
      steps += r.steps;
    }
  }
  EXPECT_GT(steps, 100);
}

TEST_F(SpeculativeDecoderTest, ConstructedPairsGiveTheTauKnownInAdvance) {
  const TinyTargetSpec mixed = testing::oracle_target_spec(3);
  const TinyTargetSpec constant = testing::oracle_target_spec(1);
  auto t_const = target("oracle-const");
  auto t_mixed = target("oracle-mixed");
  auto agree = drafter("agree", 96);
  auto disagree = drafter("disagree", 96);
  auto p_const_agree = DFlashProposer::create(t_const.get(), agree.get());
  auto p_const_disagree = DFlashProposer::create(t_const.get(), disagree.get());
  auto p_mixed_agree = DFlashProposer::create(t_mixed.get(), agree.get());
  const auto prompts = testing::make_prompts(kPrompts, 64, 3, 20, 303);
  const std::vector<int64_t> capture = agree->config().target_layer_ids;
  for (int64_t b : {4, 16}) {
    for (const auto& p : prompts) {
      DecodeResult always = decode(t_const.get(), p_const_agree->get(), p, b, capture);
      EXPECT_EQ(always.acceptance_lengths, std::vector<int64_t>(always.acceptance_lengths.size(), b));
      EXPECT_DOUBLE_EQ(always.tau(), static_cast<double>(b));
      EXPECT_EQ(always.steps, (kMaxNew + b - 1) / b);  // b new tokens per step
      DecodeResult never = decode(t_const.get(), p_const_disagree->get(), p, b, capture);
      EXPECT_DOUBLE_EQ(never.tau(), 1.0);
      EXPECT_EQ(never.steps, kMaxNew);

      // Mixed: simulate the designed next-token map to get tokens and τ per step.
      std::vector<int64_t> chain;
      int64_t x = p.back();
      for (int i = 0; i < kMaxNew + b; ++i) chain.push_back(x = oracle_next(mixed, x));
      std::vector<int64_t> expected;
      for (int64_t pos = 0; pos < kMaxNew;) {  // pos: index of the bonus token in the output
        int64_t a = oracle_next(mixed, chain[static_cast<size_t>(pos)]) == mixed.oracle_fixed_token ? b : 1;
        expected.push_back(a);
        pos += a;
      }
      DecodeResult some = decode(t_mixed.get(), p_mixed_agree->get(), p, b, capture);
      EXPECT_EQ(some.tokens, std::vector<int64_t>(chain.begin(), chain.begin() + kMaxNew));
      EXPECT_EQ(some.acceptance_lengths, expected);
    }
  }
  (void)constant;
}

TEST_F(SpeculativeDecoderTest, StopsAfterTheFirstEosLikeGreedy) {
  auto base = target("random");
  const auto prompts = testing::make_prompts(6, 320, 3, 20, 404);
  int checked = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<int64_t> free_run = naive_greedy(base.get(), prompts[i], kMaxNew);
    // A token whose first appearance is at index >= 3 becomes the EOS id.
    int64_t eos = -1;
    size_t at = 0;
    for (size_t k = 3; k < free_run.size() && eos < 0; ++k) {
      if (std::find(free_run.begin(), free_run.begin() + static_cast<long>(k), free_run[k]) ==
          free_run.begin() + static_cast<long>(k)) {
        eos = free_run[k];
        at = k;
      }
    }
    if (eos < 0) {
      ADD_FAILURE() << "no fresh token in " << ::testing::PrintToString(free_run);
      continue;
    }
    ScratchDir dir("eos");
    TinyTargetSpec spec = testing::random_target_spec();
    spec.eos_token_id = eos;
    ASSERT_TRUE(write_tiny_target(dir.path(), spec, {}).ok());
    auto t = Qwen3Target::load(dir.path(), {}, nullptr);
    ASSERT_TRUE(t.ok());
    ASSERT_EQ((*t)->config().eos_token_ids, std::vector<int64_t>{eos});
    const std::vector<int64_t> want(free_run.begin(), free_run.begin() + static_cast<long>(at) + 1);
    std::vector<int64_t> truth = prompts[i];
    truth.insert(truth.end(), free_run.begin(), free_run.end());
    truth.resize(truth.size() + 16, 0);
    for (int64_t b : {1, 4, 16}) {
      CheatingDrafter fake(truth, 320, 7);
      DecodeOptions o;
      o.block_size = b;
      o.max_new_tokens = kMaxNew;
      o.stop_ids = {eos};
      o.capture_layers = {0};
      auto r = speculative_decode(t->get(), b == 1 ? nullptr : &fake, prompts[i], o);
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ(r->tokens, want) << "block " << b;
    }
    ++checked;
  }
  EXPECT_GE(checked, 3);
}

TEST_F(SpeculativeDecoderTest, RecomputeModeMatchesCachedMode) {
  for (const char* kind : {"oracle", "hybrid"}) {
  const bool hybrid = std::string(kind) == "hybrid";
  auto t = target(hybrid ? "hybrid-mixed" : "oracle-mixed");
  auto d = drafter(hybrid ? "hybrid-agree" : "agree", 96);
  auto proposer = DFlashProposer::create(t.get(), d.get());
  auto tr = target(hybrid ? "hybrid-random" : "random");
  auto dr = drafter("random-drafter", 64);
  auto proposer_r = DFlashProposer::create(tr.get(), dr.get());
  for (const auto& p : testing::make_prompts(4, 64, 3, 12, 505)) {
    DecodeResult cached = decode(t.get(), proposer->get(), p, 8, d->config().target_layer_ids);
    DecodeResult full = decode(t.get(), proposer->get(), p, 8, d->config().target_layer_ids, true);
    EXPECT_EQ(cached.tokens, full.tokens);
    EXPECT_EQ(cached.acceptance_lengths, full.acceptance_lengths);
    DecodeResult cr = decode(tr.get(), proposer_r->get(), p, 8, dr->config().target_layer_ids);
    DecodeResult fr = decode(tr.get(), proposer_r->get(), p, 8, dr->config().target_layer_ids, true);
    EXPECT_EQ(cr.tokens, fr.tokens);
  }
  }
}

TEST_F(SpeculativeDecoderTest, CancelAndBadInputAreStatusesNotCrashes) {
  auto t = target("random");
  std::atomic<bool> cancel{true};
  DecodeOptions o;
  o.block_size = 1;
  o.cancel = &cancel;
  auto r = speculative_decode(t.get(), nullptr, {1, 2, 3}, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  o.cancel = nullptr;
  EXPECT_FALSE(speculative_decode(t.get(), nullptr, {}, o).ok());
  EXPECT_FALSE(speculative_decode(t.get(), nullptr, {1, 320}, o).ok());
  EXPECT_FALSE(speculative_decode(t.get(), nullptr, {1, -1}, o).ok());
  o.block_size = 4;
  EXPECT_FALSE(speculative_decode(t.get(), nullptr, {1, 2}, o).ok());
  o.block_size = 1;
  o.max_new_tokens = 0;
  EXPECT_FALSE(speculative_decode(t.get(), nullptr, {1, 2}, o).ok());
}

}  // namespace
}  // namespace ferry::eval
