// A sharded eval merged back (jobs/eval/run/shard_merge.h) against the same eval run
// whole, on tiny models: each shard's report goes through its JSON and back (as the
// coordinator reads it), and the merge must give the whole run's τ to the last bit,
// its histograms, accepted-slot counts, per-prompt rows and gate verdict; an eval of
// two named datasets, each row equal to an eval of its file alone, sharded alike; and
// shards that read other files under the same paths are refused (review-4 P6).
#include "jobs/eval/run/shard_merge.h"

#include <gtest/gtest.h>

#include "jobs/eval/run/eval_report_json.h"
#include "jobs/eval/run/eval_runner.h"
#include "tests/eval/eval_test_util.h"
#include "tests/eval/model_suite.h"

namespace ferry::eval {
namespace {

using testing::ScratchDir;

class ShardMergeTest : public testing::ModelSuiteTest<ShardMergeTest> {
 public:
  static void write_models() {
    // Period 3: τ varies from prompt to prompt (checked below), so a wrong merge shows.
    ASSERT_TRUE(testing::write_oracle_eval_models(dir_->path()).ok());
    ASSERT_TRUE(write_tiny_prompts(*dir_ / "prompts.jsonl", 7, 63, 4, 24, 4).ok());
    ASSERT_TRUE(write_tiny_prompts(*dir_ / "gsm.jsonl", 5, 63, 4, 24, 4).ok());  // two datasets
    ASSERT_TRUE(write_tiny_prompts(*dir_ / "code.jsonl", 4, 63, 4, 24, 9).ok());
  }

 protected:
  static EvalSpec spec(int index = 0, int count = 1) {
    EvalSpec s = testing::oracle_eval_spec(dir_->path(), index, count);
    s.prompts = *dir_ / "prompts.jsonl";
    return s;
  }
  // An eval of two named datasets (eval_datasets.h), shard `index` of `count`.
  static EvalSpec dataset_spec(int index = 0, int count = 1) {
    EvalSpec s = testing::oracle_eval_spec(dir_->path(), index, count);
    s.datasets = {{"gsm8k", *dir_ / "gsm.jsonl"}, {"humaneval", *dir_ / "code.jsonl"}};
    return s;
  }
  // One file of those alone.
  static EvalReport alone(const std::string& file) {
    EvalSpec s = spec();
    s.prompts = *dir_ / file;
    return eval_ok(s);
  }
  // Through the JSON the coordinator stores and reads back.
  static EvalReport round_trip(const EvalReport& r) {
    auto back = eval_report_from_json(nlohmann::json::parse(r.to_json().dump()));
    EXPECT_TRUE(back.ok()) << back.status().message();
    return back.ok() ? *back : EvalReport{};
  }
};

void expect_same_figures(const DecodeRun& merged, const DecodeRun& whole) {
  SCOPED_TRACE(whole.label);
  EXPECT_EQ(merged.tau, whole.tau);  // exactly: the same sum in the same order
  EXPECT_EQ(merged.responses, whole.responses);
  EXPECT_EQ(merged.response_taus, whole.response_taus);
  EXPECT_EQ(merged.acceptance_histogram, whole.acceptance_histogram);
  EXPECT_EQ(merged.accepted_at, whole.accepted_at);
  EXPECT_EQ(merged.acceptance_rate, whole.acceptance_rate);
  EXPECT_EQ(merged.drafted_tokens, whole.drafted_tokens);
  EXPECT_EQ(merged.accepted_tokens, whole.accepted_tokens);
  EXPECT_EQ(merged.overall_acceptance_rate, whole.overall_acceptance_rate);
  EXPECT_EQ(merged.tau_spread.sd, whole.tau_spread.sd);  // each exactly: recomputed from the same values
  EXPECT_EQ(merged.tau_spread.p10, whole.tau_spread.p10);
  EXPECT_EQ(merged.tau_spread.p50, whole.tau_spread.p50);
  EXPECT_EQ(merged.tau_spread.p90, whole.tau_spread.p90);
  EXPECT_EQ(merged.tau_spread.ci95_low, whole.tau_spread.ci95_low);
  EXPECT_EQ(merged.tau_spread.ci95_high, whole.tau_spread.ci95_high);
  EXPECT_EQ(merged.steps, whole.steps);
  EXPECT_EQ(merged.target_forwards, whole.target_forwards);
  EXPECT_EQ(merged.draft_forwards, whole.draft_forwards);
  EXPECT_EQ(merged.generated_tokens, whole.generated_tokens);
  EXPECT_EQ(merged.responses_differing_from_baseline, whole.responses_differing_from_baseline);
}

TEST_F(ShardMergeTest, ThreeShardsMergeIntoTheWholeEval) {
  EvalSpec whole_spec = spec();
  whole_spec.min_tau = 1.0;
  auto whole = run_eval(whole_spec, nullptr, nullptr);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  ASSERT_EQ(whole->prompt_count, 7);
  // Not a degenerate case: some prompts accept more drafts than others.
  std::set<double> taus(whole->candidate.response_taus.begin(), whole->candidate.response_taus.end());
  ASSERT_GT(taus.size(), 1u);

  std::vector<EvalReport> parts;
  int64_t decoded = 0;
  for (int i = 0; i < 3; ++i) {
    auto part = run_eval(spec(i, 3), nullptr, nullptr);
    ASSERT_TRUE(part.ok()) << part.status().message();
    EXPECT_EQ(part->shard.index, i);
    EXPECT_EQ(part->shard.prompt_total, 7);
    EXPECT_EQ(part->shard.first_prompt, decoded);
    decoded += part->prompt_count;
    parts.push_back(round_trip(*part));
  }
  EXPECT_EQ(decoded, 7);

  auto merged = merge_shard_reports(parts, {"a", "b", "c"}, 1.0, std::nullopt);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->prompt_count, 7);
  EXPECT_EQ(merged->shard.count, 1);
  expect_same_figures(merged->candidate, whole->candidate);
  double cpu = 0, capacity = 0, contending = 0;  // the CPU contention over every shard's pass
  for (const auto& p : parts) {
    cpu += p.candidate.cpu_seconds, capacity += p.candidate.cpu_capacity_seconds;
    contending += p.candidate.contending_cpu_seconds;
  }
  ASSERT_GT(capacity, 0);
  EXPECT_EQ(merged->candidate.cpu_seconds, cpu);
  EXPECT_EQ(merged->candidate.contending_cpu_seconds, contending);
  EXPECT_EQ(merged->candidate.cpu_contention, contending / capacity);
  ASSERT_TRUE(merged->reference_run && merged->baseline);
  expect_same_figures(*merged->reference_run, *whole->reference_run);
  expect_same_figures(*merged->baseline, *whole->baseline);
  ASSERT_TRUE(merged->ratio_to_reference.has_value());
  EXPECT_EQ(*merged->ratio_to_reference, *whole->ratio_to_reference);
  ASSERT_EQ(merged->responses.size(), whole->responses.size());
  for (size_t i = 0; i < whole->responses.size(); ++i) {
    EXPECT_EQ(merged->responses[i].line, whole->responses[i].line);
    EXPECT_EQ(merged->responses[i].ids, whole->responses[i].ids);
    EXPECT_EQ(merged->responses[i].acceptance_lengths, whole->responses[i].acceptance_lengths);
    EXPECT_EQ(merged->responses[i].drafted, whole->responses[i].drafted);
    EXPECT_EQ(merged->responses[i].matches_baseline, whole->responses[i].matches_baseline);
  }
  EXPECT_EQ(merged->metrics().at("tau"), whole->metrics().at("tau"));
  EXPECT_EQ(merged->gate_passed, whole->gate_passed);
  EXPECT_EQ(merged->gate_message, whole->gate_message);
  ASSERT_EQ(merged->shards.size(), 3u);
  EXPECT_EQ(merged->shards[1].stage, "b");
  EXPECT_EQ(merged->shards[1].first_prompt, parts[1].shard.first_prompt);
  EXPECT_NE(merged->to_text().find("shard    c: prompts"), std::string::npos) << merged->to_text();

  // The gate is judged on the whole: a bar above the merged τ fails it.
  auto strict = merge_shard_reports(parts, {}, whole->candidate.tau + 0.01, std::nullopt);
  ASSERT_TRUE(strict.ok());
  EXPECT_FALSE(strict->gate_passed);
  EXPECT_NE(strict->gate_message.find("min_tau"), std::string::npos);
}

TEST_F(ShardMergeTest, PartsThatDoNotMakeOneEvalAreRefusedNamingTheShard) {
  std::vector<EvalReport> parts;
  for (int i = 0; i < 2; ++i) {
    auto part = run_eval(spec(i, 2), nullptr, nullptr);
    ASSERT_TRUE(part.ok()) << part.status().message();
    parts.push_back(round_trip(*part));
  }
  ASSERT_TRUE(merge_shard_reports(parts, {}, std::nullopt, std::nullopt).ok());

  auto missing = merge_shard_reports({parts[0]}, {}, std::nullopt, std::nullopt);
  EXPECT_FALSE(missing.ok());
  auto swapped = merge_shard_reports({parts[1], parts[0]}, {}, std::nullopt, std::nullopt);
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.status().message().find("shard 1 of 2 reports itself as shard 2 of 2"), std::string::npos)
      << swapped.status().message();
  std::vector<EvalReport> other_drafter = parts;
  other_drafter[1].drafter = "elsewhere";
  auto d = merge_shard_reports(other_drafter, {}, std::nullopt, std::nullopt);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("shard 2 of 2 evaluated drafter 'elsewhere'"), std::string::npos)
      << d.status().message();
  std::vector<EvalReport> old = parts;
  old[0].candidate.accepted_at.clear();  // as a ferry-eval before sharding wrote it
  auto o = merge_shard_reports(old, {}, std::nullopt, std::nullopt);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("no accepted-slot counts"), std::string::npos) << o.status().message();
  std::vector<EvalReport> short_part = parts;
  short_part[1].candidate.responses -= 1;
  EXPECT_FALSE(merge_shard_reports(short_part, {}, std::nullopt, std::nullopt).ok());
}

// Review-4 P6: host c still holds last week's ckpt/drafter. The shards name the same
// drafter path, so the paths agree; the files do not, and the merge must not blend two
// drafters' τ into one "exact" report. Here the second shard's drafter folder holds the
// disagreeing drafter under the first one's path; put back, the same files merge.
TEST_F(ShardMergeTest, ShardsOfDifferentCheckpointsUnderOnePathAreRefused) {
  ScratchDir own("same-path");
  ASSERT_TRUE(testing::write_oracle_eval_models(own.path()).ok());
  auto shard = [&](int index) {
    EvalSpec s = testing::oracle_eval_spec(own.path(), index, 2);
    s.prompts = *dir_ / "prompts.jsonl";
    s.host = index == 0 ? "a" : "c";
    auto r = run_eval(s, nullptr, nullptr);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? round_trip(*r) : EvalReport{};
  };
  const EvalReport first = shard(0);
  ASSERT_FALSE(first.fingerprints.empty());
  EXPECT_EQ(first.fingerprints[1].what, "drafter");
  EXPECT_EQ(first.host, "a");

  // Last week's drafter, under this week's path.
  ASSERT_TRUE(write_tiny_drafter(own / "drafter", testing::oracle_drafter_spec("disagree", 16), {}).ok());
  const EvalReport stale = shard(1);
  ASSERT_EQ(stale.drafter, first.drafter);  // the paths the old check compared agree
  auto blended =
      merge_shard_reports({first, stale}, {"split-shard-1-of-2", "split-shard-2-of-2"}, std::nullopt, std::nullopt);
  ASSERT_FALSE(blended.ok()) << "merged tau " << blended->candidate.tau << " of two drafters";
  const std::string why = blended.status().message();
  EXPECT_NE(why.find("shard 2 of 2 (split-shard-2-of-2 on host c) loaded another drafter than shard 1 "
                     "(split-shard-1-of-2 on host a) under the same path '" +
                     first.drafter + "': the files differ (content fingerprint "),
            std::string::npos)
      << why;

  // This week's drafter back on c: the same files merge, exactly as the whole eval.
  ASSERT_TRUE(write_tiny_drafter(own / "drafter", testing::oracle_drafter_spec("agree", 16), {}).ok());
  auto merged = merge_shard_reports({first, shard(1)}, {}, std::nullopt, std::nullopt);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EvalSpec whole_spec = testing::oracle_eval_spec(own.path());
  whole_spec.prompts = *dir_ / "prompts.jsonl";
  auto whole = run_eval(whole_spec, nullptr, nullptr);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  expect_same_figures(merged->candidate, whole->candidate);
  EXPECT_EQ(merged->to_json()["fingerprints"], whole->to_json()["fingerprints"]);

  // A shard whose report has no fingerprints (an older ferry-eval wrote it) is refused too.
  EvalReport old = stale;
  old.fingerprints.clear();
  auto unchecked = merge_shard_reports({first, old}, {}, std::nullopt, std::nullopt);
  ASSERT_FALSE(unchecked.ok());
  EXPECT_NE(unchecked.status().message().find("shard 2 of 2 (on host c) carries no content fingerprints"),
            std::string::npos)
      << unchecked.status().message();
}

// Issue 43: named datasets in one eval. Each dataset's row holds what an eval of its
// file alone gives (τ to the last bit), the overall figures stay over all responses.
AcceptanceCounts counts_of(const EvalReport& r) {
  AcceptanceCounts c;
  for (const auto& x : r.responses) {
    AcceptanceCounts one = acceptance_counts(x.acceptance_lengths, r.block_size);
    c.drafted += one.drafted;
    c.accepted += one.accepted;
  }
  return c;
}

TEST_F(ShardMergeTest, EachDatasetsTauIsTheTauOfAnEvalOfItsFileAlone) {
  auto both = run_eval(dataset_spec(), nullptr, nullptr);
  ASSERT_TRUE(both.ok()) << both.status().message();
  const EvalReport gsm = alone("gsm.jsonl"), code = alone("code.jsonl");
  ASSERT_EQ(both->datasets.size(), 2u);
  EXPECT_EQ(both->prompt_count, 9);
  EXPECT_EQ(both->candidate.responses, 9);
  for (const auto& [row, one] : {std::pair{&both->datasets[0], &gsm}, {&both->datasets[1], &code}}) {
    SCOPED_TRACE(row->name);
    EXPECT_EQ(row->prompts, one->prompt_count);
    EXPECT_EQ(row->tau, one->candidate.tau);  // exactly: the same rows summed in the same order
    ASSERT_TRUE(row->reference_tau && one->reference_run);
    EXPECT_EQ(*row->reference_tau, one->reference_run->tau);
    ASSERT_TRUE(row->ratio_to_reference && one->ratio_to_reference);
    EXPECT_EQ(*row->ratio_to_reference, *one->ratio_to_reference);
    const AcceptanceCounts c = counts_of(*one);
    EXPECT_EQ(row->drafted_tokens, c.drafted);
    EXPECT_EQ(row->accepted_tokens, c.accepted);
    EXPECT_GT(row->drafted_tokens, 0);
    EXPECT_EQ(row->acceptance_rate, acceptance_ratio(c));
    EXPECT_GT(row->speedup, 0);
  }
  EXPECT_EQ(both->datasets[1].first_prompt, 5);
  // Not a degenerate case: the datasets' τ differ, so a row read from the wrong file shows.
  EXPECT_NE(both->datasets[0].tau, both->datasets[1].tau);
  // The overall τ stays z-lab's mean over every response of both files.
  double sum = 0;
  for (double t : gsm.candidate.response_taus) sum += t;
  for (double t : code.candidate.response_taus) sum += t;
  EXPECT_DOUBLE_EQ(both->candidate.tau, sum / 9);
  EXPECT_EQ(both->prompts, "gsm8k=" + *dir_ / "gsm.jsonl" + " humaneval=" + *dir_ / "code.jsonl");

  // The JSON carries the rows (and reads back), the text shows them as columns.
  const nlohmann::json j = both->to_json();
  ASSERT_EQ(j["datasets"].size(), 2u);
  EXPECT_EQ(j["datasets"][1]["name"], "humaneval");
  for (const char* key : {"prompts", "tau", "reference_tau", "ratio_to_reference", "speedup", "acceptance_rate"}) {
    EXPECT_TRUE(j["datasets"][0].contains(key)) << key;
  }
  EXPECT_EQ(round_trip(*both).datasets[1].tau, both->datasets[1].tau);
  // The flat metrics (a watch's CSV and chart) carry each dataset's figures by name.
  const nlohmann::json& metrics = j["metrics"];
  EXPECT_EQ(metrics.value("tau.gsm8k", -1.0), gsm.candidate.tau);
  EXPECT_EQ(metrics.value("tau.humaneval", -1.0), code.candidate.tau);
  EXPECT_EQ(metrics.value("ratio_to_reference.humaneval", -1.0), *code.ratio_to_reference);
  EXPECT_EQ(metrics.value("acceptance_rate.gsm8k", -1.0), both->datasets[0].acceptance_rate);
  EXPECT_EQ(metrics.value("speedup.gsm8k", -1.0), both->datasets[0].speedup);
  EXPECT_FALSE(gsm.to_json()["metrics"].contains("tau.gsm8k")) << "one file: no per-dataset metrics";
  const std::string text = both->to_text();
  EXPECT_NE(text.find("datasets\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gsm8k   humaneval"), std::string::npos) << text;
  EXPECT_EQ(gsm.to_text().find("datasets\n"), std::string::npos) << "one file: no table";
}

TEST_F(ShardMergeTest, ShardedDatasetsMergeIntoTheUnshardedEval) {
  auto whole = run_eval(dataset_spec(), nullptr, nullptr);
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  std::vector<EvalReport> parts;
  for (int i = 0; i < 3; ++i) {
    auto part = run_eval(dataset_spec(i, 3), nullptr, nullptr);
    ASSERT_TRUE(part.ok()) << part.status().message();
    ASSERT_EQ(part->datasets.size(), 2u);
    for (const auto& d : part->datasets) EXPECT_GT(d.prompts, 0) << "each shard decodes part of every dataset";
    parts.push_back(round_trip(*part));
  }
  auto merged = merge_shard_reports(parts, {"a", "b", "c"}, std::nullopt, std::nullopt);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(merged->prompt_count, 9);
  expect_same_figures(merged->candidate, whole->candidate);
  ASSERT_TRUE(merged->reference_run && merged->baseline);
  expect_same_figures(*merged->reference_run, *whole->reference_run);
  expect_same_figures(*merged->baseline, *whole->baseline);
  // Every figure of every dataset's row, exactly, but the speedup (timed, not decoded).
  nlohmann::json rows = merged->to_json()["datasets"], want = whole->to_json()["datasets"];
  ASSERT_EQ(rows.size(), 2u);
  for (auto* r : {&rows, &want}) {
    for (auto& d : *r) d.erase("speedup");
  }
  EXPECT_EQ(rows, want);
  ASSERT_EQ(merged->responses.size(), whole->responses.size());
  for (size_t i = 0; i < whole->responses.size(); ++i) {
    EXPECT_EQ(merged->responses[i].line, whole->responses[i].line) << i;
    EXPECT_EQ(merged->responses[i].ids, whole->responses[i].ids) << i;
  }

  // A part that is not its shard's part of every dataset is refused, naming both.
  parts[1].datasets[1].first_in_file += 1;
  auto bad = merge_shard_reports(parts, {}, std::nullopt, std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("shard 2 of 3"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("'humaneval'"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace ferry::eval
