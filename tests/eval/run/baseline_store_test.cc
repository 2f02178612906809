// The reference and baseline runs an eval keeps for later evals (issue 43,
// jobs/eval/run/baseline_store.h), through run_eval on tiny constructed models: a
// second eval with the same key decodes only its candidate (its target forwards
// say so) and reports the reference, the baseline and every comparison with them
// exactly as an eval that decodes them afresh; any change to what they depend on
// (the prompts' content at the same path, the reference's weights, max_new_tokens)
// is another key; a store file cut short is said and decoded again.
#include "jobs/eval/run/baseline_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "jobs/eval/run/eval_runner.h"
#include "tests/eval/eval_test_util.h"
#include "tests/eval/model_suite.h"

namespace ferry::eval {
namespace {

using testing::ScratchDir;

class BaselineStoreTest : public testing::ModelSuiteTest<BaselineStoreTest> {
 public:
  static void write_models() {
    // Period 3: the agree drafters are accepted (the reference, block 4, every time) and the
    // disagree one never, so the runs differ and the counts are not trivial.
    ASSERT_TRUE(testing::write_oracle_models(dir_->path(), 3).ok());
    ASSERT_TRUE(write_tiny_drafter(*dir_ / "reference", testing::oracle_drafter_spec("agree", 4), {}).ok());
    ASSERT_TRUE(write_tiny_prompts(*dir_ / "prompts.jsonl", 5, 64, 3, 10, 9).ok());
  }

 protected:
  EvalSpec spec(const std::string& drafter) {
    EvalSpec s;
    s.target = *dir_ / "target";
    s.drafter = *dir_ / drafter;
    s.reference = *dir_ / "reference";
    s.prompts = *dir_ / "prompts.jsonl";
    s.max_new_tokens = 24;
    s.threads = 1;
    s.baseline_store = store_.path();
    return s;
  }
  // A run's figures that decoding decides (its timings are the eval's that ran it).
  static nlohmann::json decoded(const std::optional<DecodeRun>& run) {
    if (!run) return nullptr;
    nlohmann::json j = run->to_json();
    for (const char* timing : {"prefill_seconds", "decode_seconds", "target_seconds", "draft_seconds",
                               "overhead_seconds", "tokens_per_second", "mean_tpot", "tpot_sum", "response_tpots",
                               "cpu_seconds", "cpu_capacity_seconds", "contending_cpu_seconds", "cpu_contention"}) {
      j.erase(timing);
    }
    return j;
  }
  static int64_t forwards(const EvalReport& r) {
    return r.candidate.target_forwards + r.reference_run->target_forwards + r.baseline->target_forwards;
  }
  ScratchDir store_{"store"};
};

TEST_F(BaselineStoreTest, ASecondEvalWithTheSameKeyDecodesOnlyItsCandidateAndReportsWhatAFreshOneWould) {
  EvalReport first = eval_ok(spec("agree"));
  EXPECT_FALSE(first.baseline_reused);
  ASSERT_EQ(first.baseline_key.size(), 32u);
  EXPECT_TRUE(std::filesystem::exists(stored_runs_path(store_.path(), first.baseline_key)));
  EXPECT_EQ(first.target_forwards_run, forwards(first));

  EvalReport second = eval_ok(spec("disagree"));  // another checkpoint of the same watch
  EXPECT_TRUE(second.baseline_reused);
  EXPECT_EQ(second.baseline_key, first.baseline_key);
  EXPECT_EQ(second.baseline_computed_by, *dir_ / "agree");
  EXPECT_EQ(second.target_forwards_run, second.candidate.target_forwards) << "only the candidate decoded";
  // The stored runs as they were, timing included: the speedup is against the first eval's baseline.
  EXPECT_EQ(second.baseline->to_json(), first.baseline->to_json());
  EXPECT_EQ(second.reference_run->to_json(), first.reference_run->to_json());
  EXPECT_DOUBLE_EQ(second.speedup, second.baseline->mean_tpot / second.candidate.mean_tpot);

  // The same eval without a store: every figure that decoding decides is the same.
  EvalSpec fresh_spec = spec("disagree");
  fresh_spec.baseline_store.clear();
  EvalReport fresh = eval_ok(fresh_spec);
  EXPECT_TRUE(fresh.baseline_key.empty());
  EXPECT_EQ(decoded(second.reference_run), decoded(fresh.reference_run));
  EXPECT_EQ(decoded(second.baseline), decoded(fresh.baseline));
  EXPECT_EQ(decoded(second.candidate), decoded(fresh.candidate));
  EXPECT_EQ(*second.ratio_to_reference, *fresh.ratio_to_reference);
  ASSERT_EQ(second.responses.size(), fresh.responses.size());
  for (size_t i = 0; i < fresh.responses.size(); ++i) {
    EXPECT_EQ(second.responses[i].to_json(), fresh.responses[i].to_json()) << "response " << i;
  }
  EXPECT_GT(first.reference_run->tau, 1.0);
  EXPECT_LE(first.reference_run->tau, 4.0);

  const std::string text = second.to_text();
  EXPECT_NE(text.find("reference and baseline: reused, as the eval of " + *dir_ / "agree" + " decoded them (key " +
                      first.baseline_key + "); the speedup is against that stored baseline's timing"),
            std::string::npos)
      << text;
  nlohmann::json j = second.to_json();
  EXPECT_EQ(j["baseline_reused"], true);
  EXPECT_EQ(j["baseline_key"], first.baseline_key);
  EXPECT_EQ(j["target_forwards_run"], second.candidate.target_forwards);
  EXPECT_EQ(j["metrics"]["baseline_reused"], 1.0);
}

TEST_F(BaselineStoreTest, WhatTheRunsDependOnMakesAnotherKey) {
  const std::string key = eval_ok(spec("agree")).baseline_key;
  EXPECT_TRUE(eval_ok(spec("disagree")).baseline_reused);

  EvalSpec longer = spec("agree");
  longer.max_new_tokens = 16;
  EvalReport r = eval_ok(longer);
  EXPECT_FALSE(r.baseline_reused);
  EXPECT_NE(r.baseline_key, key);

  // The same paths with other content: the prompts file rewritten, the reference
  // replaced by another drafter's files.
  ScratchDir other("other-inputs");
  std::filesystem::copy(*dir_ / "target", other / "target");
  std::filesystem::copy(*dir_ / "reference", other / "reference");
  ASSERT_TRUE(write_tiny_prompts(other / "prompts.jsonl", 5, 64, 3, 10, 9).ok());
  EvalSpec moved = spec("agree");
  moved.target = other / "target";
  moved.reference = other / "reference";
  moved.prompts = other / "prompts.jsonl";
  EXPECT_EQ(eval_ok(moved).baseline_key, key) << "the key is the content's, not the paths'";
  ASSERT_TRUE(write_tiny_prompts(other / "prompts.jsonl", 5, 64, 3, 10, 10).ok());
  EvalReport prompts_changed = eval_ok(moved);
  EXPECT_FALSE(prompts_changed.baseline_reused);
  EXPECT_NE(prompts_changed.baseline_key, key);
  std::filesystem::remove_all(other / "reference");
  std::filesystem::copy(*dir_ / "disagree", other / "reference");
  EvalReport reference_changed = eval_ok(moved);
  EXPECT_FALSE(reference_changed.baseline_reused);
  EXPECT_DOUBLE_EQ(reference_changed.reference_run->tau, 1.0) << "the new reference was decoded";
}

TEST_F(BaselineStoreTest, AStoreFileCutShortIsSaidAndDecodedAgain) {
  const std::string key = eval_ok(spec("agree")).baseline_key;
  const std::string file = stored_runs_path(store_.path(), key);
  const std::string whole = testing::read_text(file);
  testing::write_text(file, whole.substr(0, whole.size() / 2));
  EvalReport r = eval_ok(spec("disagree"));
  EXPECT_FALSE(r.baseline_reused);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.back().find("stored baseline not used: " + file + ": not JSON"), std::string::npos)
      << r.warnings.back();
  EXPECT_EQ(r.target_forwards_run, forwards(r));
  EXPECT_TRUE(eval_ok(spec("agree")).baseline_reused) << "stored again whole";
}

}  // namespace
}  // namespace ferry::eval
