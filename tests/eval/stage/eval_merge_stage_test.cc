// EvalMergeStage (a sharded eval's merge) through a scripted StageEnv: shard reports
// written here by hand, with τ and counts worked out by hand, become the stage's
// outcome; a missing, malformed or mismatched shard fails it, naming the shard.
#include "jobs/eval/stage/eval_merge_stage.h"

#include <gtest/gtest.h>

#include "tests/support/scripted_stage_env.h"

namespace ferry {
namespace {

// Shard `index` of 2 of a 3-prompt eval, block 4 (shard 1 has prompt 1, shard 2
// prompts 2 and 3), on host a or b, of the same files: per-response τ `taus`.
nlohmann::json shard_report(int index, std::vector<double> taus, std::vector<int64_t> histogram,
                            std::vector<int64_t> accepted_at, int64_t steps) {
  const int64_t n = static_cast<int64_t>(taus.size()), first = index == 0 ? 0 : 1;
  nlohmann::json responses = nlohmann::json::array();
  for (int64_t i = 0; i < n; ++i) responses.push_back({{"line", first + i + 1}});
  nlohmann::json run = {{"label", "candidate"},
                        {"block_size", 4},
                        {"responses", n},
                        {"response_taus", taus},
                        {"acceptance_histogram", histogram},
                        {"accepted_at", accepted_at},
                        {"steps", steps},
                        {"generated_tokens", 6 * n},
                        {"tpot_sum", 0.1 * static_cast<double>(n)},
                        {"tpot_count", n}};
  nlohmann::json fingerprints = {{{"what", "drafter"}, {"digest", "d1"}}, {{"what", "prompts"}, {"digest", "p1"}}};
  return {{"host", index == 0 ? "a" : "b"},
          {"drafter", "ckpt"},
          {"prompts", "p.jsonl"},
          {"block_size", 4},
          {"max_new_tokens", 6},
          {"prompt_count", n},
          {"shard", {{"index", index}, {"count", 2}, {"first_prompt", first}, {"prompt_total", 3}}},
          {"fingerprints", fingerprints},
          {"candidate", run},
          {"responses", responses}};
}

StageOutcome run_merge(testing::ScriptedStageEnv& env, std::optional<double> min_tau) {
  EvalMergeStage merge(env, {"s-shard-1-of-2", "s-shard-2-of-2"}, min_tau, std::nullopt);
  StageOutcome out;
  bool done = false;
  merge.start([&](StageOutcome o) {
    out = std::move(o);
    done = true;
  });
  env.io().run();
  EXPECT_TRUE(done);
  return out;
}

TEST(EvalMergeStageTest, ShardReportsBecomeTheWholeEvalsOutcome) {
  testing::ScriptedStageEnv env;
  env.stage_reports["s-shard-1-of-2"] = shard_report(0, {3.0}, {0, 1, 0, 0, 1}, {0, 1, 1, 1}, 2);
  env.stage_reports["s-shard-2-of-2"] = shard_report(1, {2.0, 1.0}, {0, 2, 1, 0, 0}, {0, 1, 0, 0}, 3);
  // ferry copied the drafter to b only: a copy manifest is compared where both shards have one.
  env.stage_reports["s-shard-2-of-2"]["fingerprints"][0]["copy_manifest"] = "m1";
  StageOutcome o = run_merge(env, 2.0);
  ASSERT_EQ(o.state, StageOutcome::State::kSucceeded) << o.error;
  // τ = (3 + 2 + 1) / 3 = 2, the mean over responses (the mean of the shards' τs would be 2.25).
  EXPECT_EQ(o.outputs["tau"], "2");
  EXPECT_EQ(o.metrics["tau"], 2.0);
  EXPECT_EQ(o.metrics["steps"], 5);
  EXPECT_EQ(o.metrics["generated_tokens"], 18);
  EXPECT_DOUBLE_EQ(o.metrics["acceptance_rate_1"], 2.0 / 5.0);  // (1 + 1) of 5 steps
  EXPECT_DOUBLE_EQ(o.metrics["acceptance_rate_3"], 1.0 / 5.0);
  EXPECT_EQ(o.report["candidate"]["acceptance_histogram"], nlohmann::json({0, 3, 1, 0, 1}));
  EXPECT_EQ(o.report["prompt_count"], 3);
  ASSERT_EQ(o.report["responses"].size(), 3u);
  EXPECT_EQ(o.report["responses"][2]["line"], 3);
  EXPECT_EQ(o.report["shards"][1]["stage"], "s-shard-2-of-2");
  EXPECT_EQ(o.report["shards"][1]["host"], "b");
  EXPECT_FALSE(o.report.contains("host")) << "a merge ran on its shards' hosts, each in its row";
  EXPECT_EQ(o.report["fingerprints"], shard_report(0, {3.0}, {}, {}, 0)["fingerprints"]);
  EXPECT_FALSE(o.report.contains("shard"));
  ASSERT_EQ(env.events.size(), 1u);
  EXPECT_EQ(env.events[0].first, "eval.report");
  EXPECT_NE(env.log.find("gate: PASSED"), std::string::npos) << env.log;

  // The gate judges the merged τ: 2 is below 2.1.
  testing::ScriptedStageEnv strict;
  strict.stage_reports = env.stage_reports;
  StageOutcome f = run_merge(strict, 2.1);
  EXPECT_EQ(f.state, StageOutcome::State::kFailed);
  EXPECT_NE(f.error.find("gate failed: tau 2 < min_tau 2.1"), std::string::npos) << f.error;
}

TEST(EvalMergeStageTest, AMissingMalformedOrForeignShardFailsTheMergeNamingIt) {
  const nlohmann::json good0 = shard_report(0, {3.0}, {0, 1, 0, 0, 1}, {0, 1, 1, 1}, 2);
  const nlohmann::json good1 = shard_report(1, {2.0, 1.0}, {0, 2, 1, 0, 0}, {0, 1, 0, 0}, 3);
  struct Case {
    const char* what;
    nlohmann::json second;  // null: shard 2 recorded nothing
    const char* error;
    nlohmann::json first = nullptr;  // null: good0
  };
  nlohmann::json wrong_type = good1, other_drafter = good1, swapped = good0, other_files = good1, unmarked = good1;
  nlohmann::json first_copied = good0, copied_apart = good1;  // the same fingerprints, two different copies
  first_copied["fingerprints"][0]["copy_manifest"] = "m1";
  copied_apart["fingerprints"][0]["copy_manifest"] = "m2";
  wrong_type["candidate"]["response_taus"][1] = "1.0";
  other_drafter["drafter"] = "another";
  other_files["fingerprints"][0]["digest"] = "d2";  // the same path, other files on host b (review-4 P6)
  unmarked.erase("fingerprints");                   // a ferry-eval older than fingerprints wrote it
  const Case cases[] = {
      {"missing", nullptr, "shard stage 's-shard-2-of-2' recorded no eval report"},
      {"wrong type", wrong_type, "'s-shard-2-of-2': the eval report's candidate.response_taus[1] is a string"},
      {"other drafter", other_drafter, "shard 2 of 2 evaluated drafter 'another'"},
      {"shard 1 twice", swapped, "shard 2 of 2 reports itself as shard 1 of 2"},
      {"other files", other_files,
       "shard 2 of 2 (s-shard-2-of-2 on host b) loaded another drafter than shard 1 (s-shard-1-of-2 on host a) under "
       "the same path 'ckpt': the files differ (content fingerprint d2 against d1)"},
      {"no fingerprints", unmarked, "shard 2 of 2 (s-shard-2-of-2 on host b) carries no content fingerprints"},
      {"copied apart", copied_apart,
       "under the same path 'ckpt': ferry copied different files there (copy manifest "
       "m2 against m1 in .ferry-complete",
       first_copied},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    testing::ScriptedStageEnv env;
    env.stage_reports["s-shard-1-of-2"] = c.first.is_null() ? good0 : c.first;
    if (!c.second.is_null()) env.stage_reports["s-shard-2-of-2"] = c.second;
    StageOutcome o = run_merge(env, std::nullopt);
    EXPECT_EQ(o.state, StageOutcome::State::kFailed);
    EXPECT_NE(o.error.find(c.error), std::string::npos) << o.error;
    EXPECT_TRUE(o.outputs.empty());
  }
}

}  // namespace
}  // namespace ferry
