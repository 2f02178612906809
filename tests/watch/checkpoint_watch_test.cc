// An eval that watches a training stage, end to end on local hosts: the "trainer"
// writes checkpoints (the engine's deterministic tiny drafters, ferry-tiny-models,
// each with a step file so their contents differ) into checkpoint-N folders file by
// file, the watching eval copies and evaluates each on the evaluator host as it is
// completed. The coordinator is SIGKILLed after the second checkpoint's eval is
// recorded, while the trainer waits; the trainer then writes checkpoints 3 and 4 and
// a checkpoint-5 with checkpoint-4's files, and `ferry resume` finishes the run:
// each of 1..4 evaluated exactly once with its step, 5 recognised by content.
#include <signal.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::write_text;

class CheckpointWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = testing::run_process({testing::bin_dir() + "/ferry-tiny-models", "suite", "--out", suite_.path()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::map<std::string, std::string> env() { return {{"FERRY_HOME", home_.path()}, {"NO_COLOR", "1"}}; }
  testing::ProcessResult ferry(std::vector<std::string> args) {
    args.insert(args.begin(), testing::bin_dir() + "/ferry");
    return testing::run_process(args, env(), 300);
  }
  // The events of one stage of type `type`, in the order recorded.
  std::vector<nlohmann::json> events(const std::string& stage, const std::string& type) {
    auto r = testing::run_process({"sqlite3", "-cmd", ".timeout 10000", "-json", home_.file("ferry.db"),
                                   "SELECT detail FROM events WHERE stage='" + stage + "' AND type='" + type +
                                       "' ORDER BY seq"});
    std::vector<nlohmann::json> out;
    auto j = nlohmann::json::parse(r.out.empty() ? "[]" : r.out, nullptr, false);
    if (!j.is_array()) return out;
    for (const auto& e : j) out.push_back(nlohmann::json::parse(e.value("detail", "null")));
    return out;
  }
  // The trainer: `ck STEP DRAFTER` makes the folder with its step file first, then
  // copies the model's files in one by one, as a trainer writes them; between
  // checkpoints 2 and 3 it waits for the file `go`.
  std::string write_workflow() {
    const std::string go = work_.file("go");
    const std::string ck = work_.file("trainer/ckpt");
    const std::string trainer =
        "ck() { mkdir -p " + ck + "/checkpoint-$1; echo $1 > " + ck + "/checkpoint-$1/step.txt; cp " + suite_.path() +
        "/$2/* " + ck + "/checkpoint-$1/; }\n      ck 1 oracle-disagree\n      ck 2 oracle-agree\n"
        "      while [ ! -e " + go + " ]; do sleep 0.1; done\n      ck 3 oracle-disagree\n      ck 4 oracle-agree\n"
        "      cp -r " + ck + "/checkpoint-4 " + ck + "/checkpoint-5\n";
    const std::string wf = work_.file("wf.yaml");
    write_text(wf, "name: watch\nhosts:\n  trainer: {transport: local, workdir: " + work_.file("trainer") +
                       "}\n  evaluator: {transport: local, workdir: " + work_.file("evaluator") +
                       "}\nstages:\n  train:\n    host: trainer\n    run: |\n      " + trainer +
                       "  eval:\n    kind: eval\n    host: evaluator\n    watch: {stage: train, from: trainer:ckpt}\n"
                       "    drafter: checkpoints\n    target: " + suite_.file("oracle-target") +
                       "\n    reference: " + suite_.file("oracle-disagree") + "\n    prompts: " +
                       suite_.file("oracle-prompts.jsonl") + "\n    max_new_tokens: 16\n    threads: 1\n");
    return wf;
  }
  testing::TempDir suite_, home_, work_;
};

TEST_F(CheckpointWatchTest, EachCheckpointEvaluatedOnceAcrossACoordinatorKillAndResume) {
  const std::string wf = write_workflow(), go = work_.file("go");
  ASSERT_EQ(ferry({"validate", wf}).exit_code, 0) << ferry({"validate", wf}).err;

  pid_t coordinator = testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, env(), work_.file("run.log"));
  bool two = testing::wait_until([&] { return events("eval", "eval.report").size() >= 2; }, std::chrono::seconds(120));
  ASSERT_TRUE(two) << testing::read_text(work_.file("run.log"));
  ASSERT_EQ(::kill(coordinator, SIGKILL), 0);
  EXPECT_EQ(testing::wait_process(coordinator), 128 + SIGKILL);
  write_text(go, "");  // the trainer goes on while no coordinator watches

  auto resumed = ferry({"resume", "watch-1"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;

  auto reports = events("eval", "eval.report");
  std::vector<std::string> evaluated;
  for (const auto& r : reports) evaluated.push_back(r.value("checkpoint", std::string()));
  EXPECT_EQ(evaluated, (std::vector<std::string>{"checkpoint-1", "checkpoint-2", "checkpoint-3", "checkpoint-4"}));
  for (size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i]["step"], static_cast<int>(i) + 1);
    EXPECT_FALSE(reports[i].value("content_hash", std::string()).empty());
    // Odd steps are the drafter the target never accepts, even ones the one it always does.
    double tau = reports[i]["candidate"]["tau"].get<double>();
    if (i % 2 == 0) EXPECT_DOUBLE_EQ(tau, 1.0) << evaluated[i];
    else EXPECT_GT(tau, 1.5) << evaluated[i];
  }
  auto same = events("eval", "watch.same_content");
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0]["checkpoint"], "checkpoint-5");
  EXPECT_EQ(same[0]["same_as"], "checkpoint-4");

  auto report = nlohmann::json::parse(ferry({"report", "watch-1", "--json"}).out);
  ASSERT_EQ(report["evals"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(report["evals"][i]["step"], i + 1);
}

// Cancelled while it waits for the next checkpoint: the watch ends as cancelled with
// the trainer, rather than waiting for checkpoints that will never come.
TEST_F(CheckpointWatchTest, CancelEndsAWatchThatWaitsForCheckpoints) {
  const std::string wf = write_workflow();
  pid_t coordinator = testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, env(), work_.file("run.log"));
  bool two = testing::wait_until([&] { return events("eval", "eval.report").size() >= 2; }, std::chrono::seconds(120));
  ASSERT_TRUE(two) << testing::read_text(work_.file("run.log"));
  EXPECT_EQ(ferry({"cancel", "watch-1"}).exit_code, 0);
  EXPECT_EQ(testing::wait_process(coordinator, 60), 130) << testing::read_text(work_.file("run.log"));
  auto st = nlohmann::json::parse(ferry({"status", "watch-1", "--json"}).out);
  for (const auto& s : st["stages"]) EXPECT_EQ(s["state"], "cancelled") << s.dump();
  EXPECT_EQ(events("eval", "eval.report").size(), 2u);
}

}  // namespace
}  // namespace ferry
