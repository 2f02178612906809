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
#include "tests/support/tiny_suite_test.h"

namespace ferry {
namespace {

using testing::write_text;

class CheckpointWatchTest : public testing::TinySuiteTest {
 protected:
  CheckpointWatchTest() : TinySuiteTest(300) {}
  // The events of one stage of the run (watch-1) of type `type`, in the order recorded.
  std::vector<nlohmann::json> events(const std::string& stage, const std::string& type) {
    return ferry.events("watch-1", stage, type);
  }
  // A trainer running `lines` (one shell line each) with `ck NAME DRAFTER`, which
  // makes the folder checkpoint-NAME with its step file first, then copies the
  // model's files in one by one, as a trainer writes them; $CK is the folder.
  // `watch` and `eval` add to the eval stage's watch and to the stage itself.
  std::string write_workflow(const std::vector<std::string>& lines, const std::string& watch = "",
                             const std::string& eval = "") {
    std::string trainer =
        "CK=" + ck_dir() +
        "\n      ck() { mkdir -p \"$CK/checkpoint-$1\"; echo $1 > \"$CK/checkpoint-$1/step.txt\"; cp " + suite_.path() +
        "/$2/* \"$CK/checkpoint-$1/\"; }\n";
    for (const auto& l : lines) trainer += "      " + l + "\n";
    const std::string wf = work_.file("wf.yaml");
    write_text(wf, "name: watch\nhosts:\n  trainer: {transport: local, workdir: " + work_.file("trainer") +
                       "}\n  evaluator: {transport: local, workdir: " + work_.file("evaluator") +
                       "}\nstages:\n  train:\n    host: trainer\n    run: |\n      " + trainer +
                       "  eval:\n    kind: eval\n    host: evaluator\n    watch: {stage: train, from: trainer:ckpt" +
                       watch + "}\n    drafter: checkpoints\n    target: " + suite_.file("oracle-target") +
                       "\n    reference: " + suite_.file("oracle-disagree") + "\n    prompts: " +
                       suite_.file("oracle-prompts.jsonl") + "\n    max_new_tokens: 16\n    threads: 1\n" + eval);
    return wf;
  }
  std::string ck_dir() { return work_.file("trainer/ckpt"); }
  // Between checkpoints 2 and 3 it waits for the file `go`.
  std::string write_workflow() {
    return write_workflow({"ck 1 oracle-disagree", "ck 2 oracle-agree",
                           "while [ ! -e " + work_.file("go") + " ]; do sleep 0.1; done", "ck 3 oracle-disagree",
                           "ck 4 oracle-agree", "cp -r $CK/checkpoint-4 $CK/checkpoint-5"});
  }
  std::vector<std::string> evaluated() {
    std::vector<std::string> out;
    for (const auto& r : events("eval", "eval.report")) out.push_back(r.value("checkpoint", std::string()));
    return out;
  }
  // A stage's row of `ferry status --json` (null before the run is there).
  nlohmann::json stage_row(const std::string& stage) {
    auto st = nlohmann::json::parse(ferry({"status", "watch-1", "--json"}).out, nullptr, false);
    if (!st.is_object() || !st.contains("stages")) return nullptr;
    for (const auto& s : st["stages"]) {
      if (s.value("name", std::string()) == stage) return s;
    }
    return nullptr;
  }
  std::string stage_state(const std::string& stage) {
    auto row = stage_row(stage);
    return row.is_object() ? row.value("state", std::string()) : "";
  }
  testing::TempDir work_;
};

TEST_F(CheckpointWatchTest, EachCheckpointEvaluatedOnceAcrossACoordinatorKillAndResume) {
  const std::string wf = write_workflow(), go = work_.file("go");
  ASSERT_EQ(ferry({"validate", wf}).exit_code, 0) << ferry({"validate", wf}).err;

  pid_t coordinator =
      testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, ferry.env(), work_.file("run.log"));
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
  pid_t coordinator =
      testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, ferry.env(), work_.file("run.log"));
  bool two = testing::wait_until([&] { return events("eval", "eval.report").size() >= 2; }, std::chrono::seconds(120));
  ASSERT_TRUE(two) << testing::read_text(work_.file("run.log"));
  EXPECT_EQ(ferry({"cancel", "watch-1"}).exit_code, 0);
  EXPECT_EQ(testing::wait_process(coordinator, 60), 130) << testing::read_text(work_.file("run.log"));
  auto st = nlohmann::json::parse(ferry({"status", "watch-1", "--json"}).out);
  for (const auto& s : st["stages"]) EXPECT_EQ(s["state"], "cancelled") << s.dump();
  EXPECT_EQ(events("eval", "eval.report").size(), 2u);
}

// What trainers leave beside their checkpoints: a `latest` link (also one the
// pattern matches), a dangling one, a FIFO. The watch skips them and evaluates the
// checkpoint; the copy never sees them.
TEST_F(CheckpointWatchTest, LinksAndAFifoBesideTheCheckpointsAreIgnored) {
  const std::string wf =
      write_workflow({"ck 1 oracle-agree", "ln -s checkpoint-1 $CK/latest", "ln -s checkpoint-1 $CK/checkpoint-latest",
                      "ln -s gone $CK/checkpoint-9", "mkfifo $CK/checkpoint-pipe"});
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(evaluated(), std::vector<std::string>{"checkpoint-1"});
  EXPECT_TRUE(events("eval", "watch.skipped").empty());
}

// HF save_total_limit: checkpoints 1 and 2 appear together (one rename of the
// trainer's folder), and 2 is deleted while 1 is evaluated (once 1's copy is
// complete on the eval host). 2 is recorded as skipped, with the cause, and the watch
// goes on to 3.
TEST_F(CheckpointWatchTest, ACheckpointRotatedAwayWhileAnotherIsEvaluatedIsSkipped) {
  const std::string copied = work_.file("evaluator/checkpoints/checkpoint-1/.ferry-complete");
  const std::string wf =
      write_workflow({"CK=" + work_.file("trainer/staging"), "ck 1 oracle-disagree", "ck 2 oracle-agree",
                      "mv $CK " + ck_dir() + "; CK=" + ck_dir(), "while [ ! -e " + copied + " ]; do sleep 0.05; done",
                      "rm -rf $CK/checkpoint-2", "ck 3 oracle-agree"});
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(evaluated(), (std::vector<std::string>{"checkpoint-1", "checkpoint-3"}));
  auto skipped = events("eval", "watch.skipped");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0]["checkpoint"], "checkpoint-2");
  EXPECT_EQ(skipped[0]["during"], "copy");
  EXPECT_NE(skipped[0].value("cause", std::string()).find("checkpoint-2"), std::string::npos) << skipped[0].dump();
}

// The same rotation with `fail_on_error: true`: the skipped checkpoint fails the stage.
TEST_F(CheckpointWatchTest, FailOnErrorMakesARotatedCheckpointFailTheStage) {
  const std::string copied = work_.file("evaluator/checkpoints/checkpoint-1/.ferry-complete");
  const std::string wf =
      write_workflow({"CK=" + work_.file("trainer/staging"), "ck 1 oracle-disagree", "ck 2 oracle-agree",
                      "mv $CK " + ck_dir() + "; CK=" + ck_dir(), "while [ ! -e " + copied + " ]; do sleep 0.05; done",
                      "rm -rf $CK/checkpoint-2"},
                     ", fail_on_error: true");
  auto r = ferry({"run", wf});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  auto row = stage_row("eval");
  EXPECT_EQ(row["state"], "failed") << row.dump();
  EXPECT_EQ(row.value("error", std::string()).rfind("checkpoint-2: copy", 0), 0u) << row.dump();
}

// Left in the folder by an earlier run (`scripts/demo.sh` twice): older than the
// trainer's attempt, so not this run's, and not evaluated.
TEST_F(CheckpointWatchTest, CheckpointsFromBeforeTheFollowedAttemptAreNotEvaluated) {
  const std::string old = ck_dir() + "/checkpoint-1";
  ASSERT_EQ(testing::run_process({"mkdir", "-p", old}).exit_code, 0);
  ASSERT_EQ(testing::run_process({"sh", "-c",
                                  "cp " + suite_.path() + "/oracle-disagree/* " + old + "/ && touch -d '1 hour ago' " +
                                      old + "/* " + old})
                .exit_code,
            0);
  const std::string wf = write_workflow({"ck 2 oracle-agree"});
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(evaluated(), std::vector<std::string>{"checkpoint-2"});
  auto ignored = events("eval", "watch.ignored");
  ASSERT_EQ(ignored.size(), 1u);
  EXPECT_EQ(ignored[0]["checkpoints"], nlohmann::json::array({"checkpoint-1"}));
}

// A name no job key may hold (a space, parentheses) is evaluated all the same.
TEST_F(CheckpointWatchTest, AnOddNameIsEvaluated) {
  const std::string wf = write_workflow({"ck '500 (copy)' oracle-agree"});
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(evaluated(), std::vector<std::string>{"checkpoint-500 (copy)"});
  // On the eval's host it lands under a hashed name, as its job keys do.
  auto landed = testing::run_process({"sh", "-c", "cd " + work_.file("evaluator/checkpoints") + " && echo ck-*"});
  EXPECT_EQ(landed.out.size(), 20u) << landed.out;  // "ck-" and 16 hex digits
  EXPECT_TRUE(testing::exists(work_.file("evaluator/checkpoints/") + landed.out.substr(0, 19) + "/config.json"));
}

// A checkpoint rewritten under its name (`checkpoint-last`) is evaluated again.
TEST_F(CheckpointWatchTest, ASameNameRewriteIsEvaluatedAgain) {
  const std::string go = work_.file("go");
  const std::string wf = write_workflow({"ck last oracle-disagree", "while [ ! -e " + go + " ]; do sleep 0.1; done",
                                         "rm -rf $CK/checkpoint-last", "ck last oracle-agree"});
  pid_t coordinator =
      testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, ferry.env(), work_.file("run.log"));
  bool one = testing::wait_until([&] { return events("eval", "eval.report").size() >= 1; }, std::chrono::seconds(120));
  write_text(go, "");
  ASSERT_TRUE(one) << testing::read_text(work_.file("run.log"));
  EXPECT_EQ(testing::wait_process(coordinator, 120), 0) << testing::read_text(work_.file("run.log"));
  auto reports = events("eval", "eval.report");
  ASSERT_EQ(reports.size(), 2u) << testing::read_text(work_.file("run.log"));
  EXPECT_EQ(reports[0]["checkpoint"], "checkpoint-last");
  EXPECT_EQ(reports[1]["checkpoint"], "checkpoint-last");
  EXPECT_NE(reports[0]["content_hash"], reports[1]["content_hash"]);
  EXPECT_DOUBLE_EQ(reports[0]["candidate"]["tau"].get<double>(), 1.0);
  EXPECT_GT(reports[1]["candidate"]["tau"].get<double>(), 1.5);
}

// `timeout` bounds the whole watch, not only each checkpoint's worker: a trainer that
// never completes a checkpoint does not hold the eval past it.
TEST_F(CheckpointWatchTest, TimeoutEndsAWatch) {
  const std::string go = work_.file("go");
  const std::string wf = write_workflow({"while [ ! -e " + go + " ]; do sleep 0.1; done"}, "", "    timeout: 3s\n");
  pid_t coordinator =
      testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, ferry.env(), work_.file("run.log"));
  bool timed_out = testing::wait_until([&] { return stage_state("eval") == "timed_out"; }, std::chrono::seconds(30));
  write_text(go, "");
  EXPECT_TRUE(timed_out) << stage_state("eval") << "\n" << testing::read_text(work_.file("run.log"));
  EXPECT_NE(testing::wait_process(coordinator, 60), 0);
  EXPECT_EQ(stage_state("eval"), "timed_out");
}

}  // namespace
}  // namespace ferry
