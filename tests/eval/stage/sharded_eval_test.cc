// A sharded eval (`hosts: [a, b, c]`, workflows/eval_shards.h) through `ferry run` on
// local hosts: the prompts split over three hosts and merged must give the report of
// the same eval run whole on one host (every figure but times and paths), a shard
// that failed is the only one `ferry resume` runs again, and hosts that hold other
// files under the same path are not merged. The models are the engine's
// deterministic tiny ones (ferry-tiny-models suite), written by the test.
#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "tests/eval/stage/comparable_report.h"
#include "tests/support/ferry_cli.h"
#include "tests/support/process.h"
#include "tests/support/tiny_suite_test.h"

namespace ferry {
namespace {

using testing::write_text;

class ShardedEvalTest : public testing::TinySuiteTest {
 protected:
  ShardedEvalTest() : TinySuiteTest(280) {}
  // Three local hosts, each with a workdir of its own; the models by absolute path.
  std::string workflow(const std::string& name, const std::string& b_env) {
    const std::string d = suite_.path();
    const std::string fields = "    target: " + d + "/oracle-target\n    drafter: " + d + "/oracle-agree\n" +
                               "    reference: " + d + "/oracle-disagree\n    prompts: " + d +
                               "/oracle-prompts.jsonl\n    max_new_tokens: 16\n    threads: 1\n" +
                               "    gate: {min_tau: 3.5, min_ratio_to_reference: 2}\n";
    std::string wf = suite_.file(name + ".yaml");
    write_text(wf,
               "name: " + name + "\nhosts:\n  box: {workdir: " + d + "/box}\n  a: {workdir: " + d +
                   "/a}\n  b:\n    workdir: " + d + "/b\n" + b_env + "  c: {workdir: " + d + "/c}\n" +
                   "stages:\n  whole:\n    kind: eval\n    host: box\n" + fields +
                   "  split:\n    kind: eval\n    hosts: [a, b, c]\n    needs: whole\n" + fields +
                   "  after:\n    host: box\n    needs: split\n    run: echo tau ${{ stages.split.outputs.tau }}\n");
    return wf;
  }
};

nlohmann::json stage_of(const nlohmann::json& status, const std::string& name) {
  return testing::FerryCli::stage(status, name);
}

const char* kShards[] = {"split-shard-1-of-3", "split-shard-2-of-3", "split-shard-3-of-3"};

TEST_F(ShardedEvalTest, ThePromptsSplitOverThreeHostsMergeIntoTheWholeEvalsReport) {
  const std::string wf = workflow("three", "");
  auto v = ferry({"validate", wf});
  EXPECT_NE(v.out.find("  split-shard-2-of-3 (eval on b) needs whole\n"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("  split (eval) needs split-shard-1-of-3 split-shard-2-of-3 split-shard-3-of-3, merges its 3 "
                       "shards' reports\n"),
            std::string::npos)
      << v.out;
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = ferry.status("three-1");
  const char* hosts[] = {"a", "b", "c"};
  int64_t prompts = 0;
  for (int i = 0; i < 3; ++i) {
    auto s = stage_of(st, kShards[i]);
    EXPECT_EQ(s["state"], "succeeded") << s.dump();
    EXPECT_EQ(s["host"], hosts[i]);
    auto part = ferry.events("three-1", kShards[i], "eval.report");
    ASSERT_EQ(part.size(), 1u);
    EXPECT_EQ(part[0]["shard"]["index"], i);
    prompts += part[0]["prompt_count"].get<int64_t>();
  }
  EXPECT_EQ(prompts, 20);  // the suite's prompt file, all decoded once

  auto whole = ferry.events("three-1", "whole", "eval.report");
  auto merged = ferry.events("three-1", "split", "eval.report");
  ASSERT_EQ(whole.size(), 1u);
  ASSERT_EQ(merged.size(), 1u);
  ASSERT_TRUE(merged[0].contains("shards")) << merged[0].dump().substr(0, 2000);
  ASSERT_EQ(merged[0]["shards"].size(), 3u);
  EXPECT_EQ(merged[0]["shards"][2]["stage"], kShards[2]);
  nlohmann::json m = merged[0];
  m.erase("shards");
  EXPECT_EQ(testing::comparable_report(m).dump(1), testing::comparable_report(whole[0]).dump(1));
  // Not a report of nothing: τ, a histogram over 20 responses, per-prompt rows.
  EXPECT_GT(m["candidate"]["tau"].get<double>(), 3.5);
  EXPECT_EQ(m["candidate"]["response_taus"].size(), 20u);
  EXPECT_EQ(m["responses"].size(), 20u);
  auto split = stage_of(st, "split");
  EXPECT_EQ(split["state"], "succeeded");
  EXPECT_EQ(split["outputs"]["tau"], stage_of(st, "whole")["outputs"]["tau"]);
  EXPECT_EQ(split["metrics"]["tau"], stage_of(st, "whole")["metrics"]["tau"]);
  EXPECT_EQ(split["metrics"]["ratio_to_reference"], stage_of(st, "whole")["metrics"]["ratio_to_reference"]);
  auto logs = ferry({"logs", "three-1", "split"}).out;
  EXPECT_NE(logs.find("shard    split-shard-2-of-3 on b: prompts 7-13"), std::string::npos) << logs;
  EXPECT_NE(logs.find("gate: PASSED"), std::string::npos) << logs;
  EXPECT_NE(ferry({"logs", "three-1", "after"}).out.find("tau " + split["outputs"]["tau"].get<std::string>()),
            std::string::npos);
  // `ferry report` plots evals, not their parts: the merge and the whole, no shard.
  auto page = nlohmann::json::parse(ferry({"report", "three-1", "--json"}).out, nullptr, false);
  ASSERT_TRUE(page.contains("evals")) << page.dump().substr(0, 500);
  std::vector<std::string> plotted;
  for (const auto& e : page["evals"]) plotted.push_back(e["stage"]);
  std::sort(plotted.begin(), plotted.end());
  EXPECT_EQ(plotted, (std::vector<std::string>{"split", "whole"}));
}

// Host b cannot run the worker at first (its loader finds a broken libtorch), so its
// shard fails and the run stops short of the merge; the other two shards finish.
// Once b is mended, `ferry resume` runs b's shard again and nothing else.
TEST_F(ShardedEvalTest, ResumeRunsOnlyTheShardThatFailed) {
  ASSERT_EQ(testing::run_process({"mkdir", "-p", suite_.file("broken-libtorch")}).exit_code, 0);
  write_text(suite_.file("broken-libtorch/libtorch_cpu.so.1.13"), "");
  auto r = ferry({"run", workflow("mend", "    env: {LD_LIBRARY_PATH: " + suite_.file("broken-libtorch") + "}\n")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto st = ferry.status("mend-1");
  EXPECT_EQ(stage_of(st, kShards[0])["state"], "succeeded");
  EXPECT_EQ(stage_of(st, kShards[1])["state"], "failed");
  EXPECT_NE(stage_of(st, kShards[1]).value("error", "").find("host 'b' cannot run evals"), std::string::npos);
  EXPECT_EQ(stage_of(st, kShards[2])["state"], "succeeded");
  EXPECT_NE(stage_of(st, "split")["state"], "succeeded");

  ASSERT_EQ(std::remove(suite_.file("broken-libtorch/libtorch_cpu.so.1.13").c_str()), 0);
  r = ferry({"resume", "mend-1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  st = ferry.status("mend-1");
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(kShards[i]);
    EXPECT_EQ(stage_of(st, kShards[i])["state"], "succeeded");
    // Shards 1 and 3 ran once; shard 2 twice.
    EXPECT_EQ(stage_of(st, kShards[i])["attempt"], i == 1 ? 2 : 1);
    EXPECT_EQ(ferry.events("mend-1", kShards[i], "eval.started").size(), i == 1 ? 2u : 1u);
    EXPECT_EQ(ferry.events("mend-1", kShards[i], "eval.report").size(), 1u);
  }
  auto whole = ferry.events("mend-1", "whole", "eval.report");
  auto merged = ferry.events("mend-1", "split", "eval.report");
  ASSERT_EQ(whole.size(), 1u);
  ASSERT_EQ(merged.size(), 1u);
  nlohmann::json m = merged[0];
  m.erase("shards");
  EXPECT_EQ(testing::comparable_report(m).dump(1), testing::comparable_report(whole[0]).dump(1));
  EXPECT_EQ(stage_of(st, "after")["state"], "succeeded");
}

// Review-4 P6, as it reproduced: `drafter: ckpt/drafter` on each host, the agreeing
// drafter in a's workdir and the disagreeing one in b's. The paths agree, the files do
// not: the merge is refused, naming b's shard and the drafter, and no τ comes out.
TEST_F(ShardedEvalTest, HostsHoldingOtherDraftersUnderOnePathAreNotMerged) {
  const std::string d = suite_.path();
  for (auto [host, drafter] : {std::pair{"a", "oracle-agree"}, {"b", "oracle-disagree"}}) {
    ASSERT_EQ(testing::run_process({"mkdir", "-p", d + "/" + host + "/ckpt"}).exit_code, 0);
    ASSERT_EQ(testing::run_process({"cp", "-r", d + "/" + drafter, d + "/" + host + "/ckpt/drafter"}).exit_code, 0);
  }
  std::string wf = suite_.file("stale.yaml");
  write_text(wf, "name: stale\nhosts:\n  a: {workdir: " + d + "/a}\n  b: {workdir: " + d +
                     "/b}\nstages:\n  split:\n    kind: eval\n    hosts: [a, b]\n    target: " + d +
                     "/oracle-target\n    drafter: ckpt/drafter\n    prompts: " + d +
                     "/oracle-prompts.jsonl\n    max_new_tokens: 8\n    threads: 1\n");
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto st = ferry.status("stale-1");
  EXPECT_EQ(stage_of(st, "split-shard-1-of-2")["state"], "succeeded");
  EXPECT_EQ(stage_of(st, "split-shard-2-of-2")["state"], "succeeded");
  auto merge = stage_of(st, "split");
  EXPECT_EQ(merge["state"], "failed");
  EXPECT_NE(merge.value("error", "")
                .find("shard 2 of 2 (split-shard-2-of-2 on host b) loaded another drafter than "
                      "shard 1 (split-shard-1-of-2 on host a) under the same path 'ckpt/drafter'"),
            std::string::npos)
      << merge.dump(2);
  EXPECT_FALSE(merge["outputs"].contains("tau")) << merge.dump(2);
  EXPECT_TRUE(ferry.events("stale-1", "split", "eval.report").empty());
}

// A host listed twice runs two shards, which divide its cores when `threads` is 0.
TEST_F(ShardedEvalTest, TwoShardsOnOneHostShareItsCores) {
  const std::string d = suite_.path();
  std::string wf = suite_.file("twice.yaml");
  write_text(wf, "name: twice\nhosts:\n  a: {workdir: " + d +
                     "/a}\nstages:\n  split:\n    kind: eval\n"
                     "    hosts: [a, a]\n    target: " +
                     d + "/oracle-target\n    drafter: " + d + "/oracle-agree\n" + "    prompts: " + d +
                     "/oracle-prompts.jsonl\n    max_new_tokens: 8\n");
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const int cores = CPU_COUNT(&set);  // as the engine counts them (cpu_runtime.h)
  for (const char* shard : {"split-shard-1-of-2", "split-shard-2-of-2"}) {
    auto part = ferry.events("twice-1", shard, "eval.report");
    ASSERT_EQ(part.size(), 1u) << shard;
    EXPECT_EQ(part[0]["threads"], std::max(1, cores / 2)) << shard;
  }
  auto merged = ferry.events("twice-1", "split", "eval.report");
  ASSERT_EQ(merged.size(), 1u);
  EXPECT_EQ(merged[0]["prompt_count"], 20);
}

}  // namespace
}  // namespace ferry
