// An eval that watches a training stage, end to end on local hosts: the "trainer"
// writes checkpoints (the engine's deterministic tiny drafters, ferry-tiny-models,
// each with a step file so their contents differ) into checkpoint-N folders file by
// file, the watching eval copies and evaluates each on the evaluator host as it is
// completed. The coordinator is SIGKILLed after the second checkpoint's eval is
// recorded, while the trainer waits; the trainer then writes checkpoints 3 and 4 and
// a checkpoint-5 with checkpoint-4's files, and `ferry resume` finishes the run:
// each of 1..4 evaluated exactly once with its step, 5 recognised by content.
// A gated watch's verdict is its history's: a retry, a resume and a resume after a
// coordinator kill past its last eval end as the attempt before did, and every view
// (status, report, page, metrics, log) shows that one verdict.
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
  // The eval stage's `gate` and `retries`, then a `release` stage after it that leaves
  // released(): what a failed gate must hold back. For write_workflow's `eval`.
  std::string gate_then_release(const std::string& gate, int retries = 0) {
    return "    gate: " + gate + "\n    retries: " + std::to_string(retries) +
           "\n  release:\n    host: trainer\n    needs: eval\n    run: touch " + released() + "\n";
  }
  std::string released() { return work_.file("released"); }
  // A trainer that writes checkpoint-1 from `drafter`, then waits for the file `go`
  // (saving its optimizer, say), watched by an eval gated at min_tau 1.5: the
  // coordinator is SIGKILLed once checkpoint-1's eval is recorded, the trainer then
  // ends with no coordinator watching, and `ferry resume` finishes the run.
  testing::ProcessResult resumed_after_a_kill_past_the_last_eval(const std::string& drafter) {
    const std::string go = work_.file("go");
    const std::string wf = write_workflow({"ck 1 " + drafter, "while [ ! -e " + go + " ]; do sleep 0.1; done"}, "",
                                          gate_then_release("{min_tau: 1.5}"));
    pid_t coordinator =
        testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, ferry.env(), work_.file("run.log"));
    bool one = testing::wait_until([&] { return !events("eval", "eval.report").empty(); }, std::chrono::seconds(120));
    EXPECT_TRUE(one) << testing::read_text(work_.file("run.log"));
    EXPECT_EQ(::kill(coordinator, SIGKILL), 0);
    EXPECT_EQ(testing::wait_process(coordinator), 128 + SIGKILL);
    write_text(go, "");
    auto resumed = ferry({"resume", "watch-1"});
    EXPECT_EQ(stage_row("eval")["attempt"], 1) << "re-attached, not retried";
    EXPECT_EQ(evaluated(), std::vector<std::string>{"checkpoint-1"}) << "nothing evaluated again";
    return resumed;
  }
  // The eval stage's one verdict, `passed` with `message`, as every view shows it:
  // `ferry status --json` (state, error, gate_passed among the metrics), `ferry report
  // --json` (the stage's metrics, the newest eval's gate; each checkpoint's row
  // "judged on the last checkpoint"), the page, the metrics CSV, and the log (each
  // checkpoint's section defers, the stage's last line judges).
  void expect_one_verdict(bool passed, const std::string& message) {
    SCOPED_TRACE(message);
    const double flag = passed ? 1 : 0;
    auto row = stage_row("eval");
    EXPECT_EQ(row["state"], passed ? "succeeded" : "failed") << row.dump();
    EXPECT_EQ(row["error"], passed ? "" : "gate failed: " + message) << row.dump();
    EXPECT_EQ(row["metrics"]["gate_passed"], flag) << row.dump();

    auto report = nlohmann::json::parse(ferry({"report", "watch-1", "--json"}).out);
    for (const auto& st : report["run"]["stages"]) {
      if (st["name"] == "eval") EXPECT_EQ(st["metrics"]["gate_passed"], flag) << st.dump();
    }
    EXPECT_EQ(report["eval_stage"], "eval");
    EXPECT_EQ(report["eval"]["gate_passed"], passed);
    EXPECT_EQ(report["eval"]["gate_message"], message);
    ASSERT_FALSE(report["evals"].empty());
    for (const auto& p : report["evals"]) {
      EXPECT_EQ(p["gate"], "judged on the last checkpoint") << p.dump();
      EXPECT_TRUE(p["gate_passed"].is_null()) << p.dump();
    }

    const std::string page_file = work_.file("report.html"), csv_file = work_.file("metrics.csv");
    ASSERT_EQ(ferry({"report", "watch-1", "-o", page_file, "--metrics", csv_file}).exit_code, 0);
    const std::string page = testing::read_text(page_file);
    std::string escaped;
    for (char c : message) escaped += c == '<' ? std::string("&lt;") : std::string(1, c);
    const std::string verdict =
        passed ? "gate-pass\">passed</span> — " + escaped : "gate-fail\">FAILED</span> — " + escaped;
    EXPECT_NE(page.find("<p>gate: <span class=\"" + verdict + "</p>"), std::string::npos) << page;
    EXPECT_EQ(page.find(passed ? "class=\"gate-fail\"" : "class=\"gate-pass\""), std::string::npos);
    EXPECT_EQ(page.find("<td>passed</td>"), std::string::npos) << "no checkpoint row says passed";
    EXPECT_NE(page.find("<td>judged on the last checkpoint</td>"), std::string::npos);
    EXPECT_NE(
        testing::read_text(csv_file).find(std::string("\nwatch-1,eval,,gate_passed,") + (passed ? "1" : "0") + "\n"),
        std::string::npos)
        << testing::read_text(csv_file);

    const std::string first_log = ferry({"logs", "watch-1", "eval", "--attempt", "1"}).out;
    EXPECT_NE(first_log.find("\ngate: judged on the last checkpoint\n"), std::string::npos) << first_log;
    const std::string last_line = std::string("gate: ") + (passed ? "PASSED" : "FAILED") + " (" + message + ")\n";
    const std::string log = ferry({"logs", "watch-1", "eval"}).out;
    EXPECT_EQ(log.size() >= last_line.size() ? log.substr(log.size() - last_line.size()) : log, last_line);
  }
  // The errors of the eval stage's attempts, oldest first (`ferry report --json`).
  std::vector<std::string> attempt_errors() {
    std::vector<std::string> out;
    auto report = nlohmann::json::parse(ferry({"report", "watch-1", "--json"}).out);
    for (const auto& st : report["run"]["stages"]) {
      if (st["name"] != "eval") continue;
      for (const auto& a : st["attempts"]) out.push_back(a.value("error", std::string()));
    }
    return out;
  }
  // A run's figures that decoding decides: its timings are the eval's that ran it, and
  // a watch's drafter is its checkpoint's copy.
  static nlohmann::json decoded(nlohmann::json run) {
    for (const char* timing : {"path", "prefill_seconds", "decode_seconds", "target_seconds", "draft_seconds",
                               "overhead_seconds", "tokens_per_second", "mean_tpot", "tpot_sum", "response_tpots",
                               "cpu_seconds", "cpu_capacity_seconds", "contending_cpu_seconds", "cpu_contention"}) {
      run.erase(timing);
    }
    return run;
  }
  // The target's baseline and the reference were decoded by the first checkpoint's
  // eval alone (issue 43): every later one reused them (the same runs, stored), and
  // the target forwards the stored reports ran add up to every candidate and one
  // reference and baseline. What the last checkpoint reports is what an eval that
  // decodes them afresh reports (`ferry eval` of the same drafter).
  void expect_baseline_and_reference_decoded_once(const std::vector<nlohmann::json>& reports,
                                                  const std::string& last_drafter) {
    ASSERT_GE(reports.size(), 2u);
    const nlohmann::json& first = reports[0];
    int64_t forwards = 0, candidates = 0;
    for (size_t i = 0; i < reports.size(); ++i) {
      EXPECT_EQ(reports[i]["baseline_reused"], i > 0) << i;
      EXPECT_EQ(reports[i]["baseline_key"], first["baseline_key"]) << i;
      EXPECT_EQ(reports[i]["baseline"], first["baseline"]) << i;
      EXPECT_EQ(reports[i]["reference_run"], first["reference_run"]) << i;
      forwards += reports[i]["target_forwards_run"].get<int64_t>();
      candidates += reports[i]["candidate"]["target_forwards"].get<int64_t>();
    }
    const int64_t shared =
        first["reference_run"]["target_forwards"].get<int64_t>() + first["baseline"]["target_forwards"].get<int64_t>();
    EXPECT_GT(shared, 0);
    EXPECT_EQ(forwards, candidates + shared) << "the baseline and the reference decoded once";

    auto fresh = ferry({"eval", "--target", suite_.file("oracle-target"), "--drafter", suite_.file(last_drafter),
                        "--reference", suite_.file("oracle-disagree"), "--prompts", suite_.file("oracle-prompts.jsonl"),
                        "--max-new-tokens", "16", "--threads", "1", "--json"});
    ASSERT_EQ(fresh.exit_code, 0) << fresh.err;
    auto f = nlohmann::json::parse(fresh.out);
    const nlohmann::json& last = reports.back();
    EXPECT_EQ(decoded(last["baseline"]), decoded(f["baseline"]));
    EXPECT_EQ(decoded(last["reference_run"]), decoded(f["reference_run"]));
    EXPECT_EQ(decoded(last["candidate"]), decoded(f["candidate"]));
    EXPECT_EQ(last["ratio_to_reference"], f["ratio_to_reference"]);
    for (size_t i = 0; i < last["responses"].size() && i < f["responses"].size(); ++i) {
      EXPECT_EQ(last["responses"][i]["ids"], f["responses"][i]["ids"]) << i;
      EXPECT_EQ(last["responses"][i]["matches_baseline"], f["responses"][i]["matches_baseline"]) << i;
    }
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

  // Checkpoint-1 decoded them, 2 reused them before the kill, 3 and 4 after the resume.
  expect_baseline_and_reference_decoded_once(reports, "oracle-agree");

  auto report = nlohmann::json::parse(ferry({"report", "watch-1", "--json"}).out);
  ASSERT_EQ(report["evals"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(report["evals"][i]["step"], i + 1);
    EXPECT_EQ(report["evals"][i]["baseline_reused"], i > 0);
  }
  const std::string page_file = work_.file("report.html");
  ASSERT_EQ(ferry({"report", "watch-1", "-o", page_file}).exit_code, 0);
  const std::string page = testing::read_text(page_file);
  size_t reused_rows = 0;
  for (size_t at = page.find("<td class=\"baseline-reused\">reused</td>"); at != std::string::npos;
       at = page.find("<td class=\"baseline-reused\">reused</td>", at + 1)) {
    ++reused_rows;
  }
  EXPECT_EQ(reused_rows, 3u) << page;
  EXPECT_NE(page.find("<td>decoded</td>"), std::string::npos);
  EXPECT_NE(page.find("the speedup is against that stored baseline's timing"), std::string::npos);
  const std::string log = ferry({"logs", "watch-1", "eval"}).out;
  EXPECT_NE(log.find("reference and baseline: reused, as the eval of "), std::string::npos) << log;
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

// Issue 41: the gate fails on checkpoint-1 (τ 1, ratio 1: both limits missed, both
// named). The retry evaluates nothing new and fails the same way, and so does `ferry
// resume` of the failed run; `release` never runs.
TEST_F(CheckpointWatchTest, AGateFailedWatchFailsAgainOnItsRetryAndOnResume) {
  const std::string wf =
      write_workflow({"ck 1 oracle-disagree"}, "", gate_then_release("{min_tau: 1.5, min_ratio_to_reference: 1.2}", 1));
  const std::string message =
      "checkpoint-1 (the last checkpoint): tau 1 < min_tau 1.5; tau ratio to reference 1 < min_ratio_to_reference 1.2";
  auto run = ferry({"run", wf});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE((run.out + run.err).find("eval failed: gate failed: " + message), std::string::npos) << run.out << run.err;
  EXPECT_EQ(attempt_errors(), std::vector<std::string>(2, "gate failed: " + message)) << "the retry failed alike";
  EXPECT_EQ(evaluated(), std::vector<std::string>{"checkpoint-1"}) << "the retry evaluated nothing new";
  EXPECT_NE(stage_state("release"), "succeeded");
  EXPECT_FALSE(testing::exists(released()));
  expect_one_verdict(false, message);

  auto resumed = ferry({"resume", "watch-1"});
  EXPECT_EQ(resumed.exit_code, 1) << resumed.out << resumed.err;
  auto errors = attempt_errors();
  EXPECT_GT(errors.size(), 2u) << "the resume ran the stage again";
  EXPECT_EQ(errors, std::vector<std::string>(errors.size(), "gate failed: " + message));
  EXPECT_EQ(evaluated(), std::vector<std::string>{"checkpoint-1"});
  EXPECT_NE(stage_state("release"), "succeeded");
  EXPECT_FALSE(testing::exists(released()));
  expect_one_verdict(false, message);
}

// The coordinator dies after the last checkpoint's eval while the trainer still runs
// (saving its optimizer, say). The resumed watch re-attaches, evaluates nothing new,
// and judges the gate on what is stored: failed, and `release` never runs.
TEST_F(CheckpointWatchTest, AGateFailedWatchFailsWhenResumedAfterTheCoordinatorDiedPastItsLastEval) {
  auto resumed = resumed_after_a_kill_past_the_last_eval("oracle-disagree");
  EXPECT_EQ(resumed.exit_code, 1) << resumed.out << resumed.err;
  EXPECT_NE(stage_state("release"), "succeeded");
  EXPECT_FALSE(testing::exists(released()));
  expect_one_verdict(false, "checkpoint-1 (the last checkpoint): tau 1 < min_tau 1.5");
}

// The same with a checkpoint that meets the gate: the resumed stage passes with the
// last checkpoint's τ in its outputs, and `release` runs.
TEST_F(CheckpointWatchTest, APassedGateKeepsTauInTheOutputsWhenResumedAfterTheCoordinatorDiedPastItsLastEval) {
  auto resumed = resumed_after_a_kill_past_the_last_eval("oracle-agree");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  auto row = stage_row("eval");
  auto reports = events("eval", "eval.report");
  ASSERT_EQ(reports.size(), 1u);
  const double tau = reports[0]["candidate"]["tau"].get<double>();
  EXPECT_GT(tau, 1.5);
  ASSERT_FALSE(row["outputs"].value("tau", std::string()).empty()) << row.dump();
  EXPECT_NEAR(std::stod(row["outputs"]["tau"].get<std::string>()), tau, 1e-5) << row.dump();
  EXPECT_EQ(row["outputs"]["checkpoints_evaluated"], "1") << row.dump();
  EXPECT_EQ(stage_state("release"), "succeeded");
  EXPECT_TRUE(testing::exists(released()));
  expect_one_verdict(true, "checkpoint-1 (the last checkpoint): all gates met");
}

}  // namespace
}  // namespace ferry
