// The verdict of a watching eval judged on its last checkpoint's stored report
// (jobs/eval/stage/watch/last_checkpoint_gate.h), on reports shaped as the store keeps
// them: the engine's report (jobs/eval/run/eval_report.cc), cut to what the gate reads,
// with the checkpoint the watch added and the gate the checkpoint's eval deferred.
#include "jobs/eval/stage/watch/last_checkpoint_gate.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

using nlohmann::json;

json stored_report(double tau, double reference_tau) {
  return {{"checkpoint", "checkpoint-7"},
          {"candidate", {{"tau", tau}, {"acceptance_rate", {1, 0.5}}}},
          {"reference_run", {{"tau", reference_tau}}},
          {"baseline", {{"tau", 1.0}}},
          {"speedup", 1.25},
          {"ratio_to_reference", tau / reference_tau},
          {"gate_passed", true},
          {"gate_message", ""},
          {"gate_deferred", kJudgedOnTheLastCheckpoint}};
}

TEST(LastCheckpointGateTest, BothLimitsMissedAreBothNamed) {
  StageOutcome o = judge_last_checkpoint(stored_report(1.0, 1.0), 1.5, 1.2);
  EXPECT_EQ(o.state, StageOutcome::State::kFailed);
  const std::string message =
      "checkpoint-7 (the last checkpoint): tau 1 < min_tau 1.5; tau ratio to reference 1 < min_ratio_to_reference 1.2";
  EXPECT_EQ(o.error, "gate failed: " + message);
  EXPECT_EQ(o.metrics["gate_passed"], 0.0);
  EXPECT_EQ(o.report["gate_passed"], false);
  EXPECT_EQ(o.report["gate_message"], message);
  EXPECT_FALSE(o.report.contains("gate_deferred")) << "the stage's report carries the verdict";
  EXPECT_EQ(o.outputs["tau"], "1");
}

TEST(LastCheckpointGateTest, APassedGateKeepsTheCheckpointsFiguresAsOutputsAndMetrics) {
  StageOutcome o = judge_last_checkpoint(stored_report(3.0, 1.5), 2.0, 1.5);
  EXPECT_EQ(o.state, StageOutcome::State::kSucceeded) << o.error;
  EXPECT_EQ(o.error, "");
  EXPECT_EQ(o.metrics["gate_passed"], 1.0);
  EXPECT_EQ(o.metrics["tau"], 3.0);
  EXPECT_EQ(o.metrics["ratio_to_reference"], 2.0);
  EXPECT_EQ(o.outputs["tau"], "3");
  EXPECT_EQ(o.outputs["reference_tau"], "1.5");
  EXPECT_EQ(o.outputs["speedup"], "1.25");
  EXPECT_EQ(o.report["gate_message"], "checkpoint-7 (the last checkpoint): all gates met");
}

// Fail closed: a report the store cut to its top-level figures (or one a host wrote
// wrong) holds no τ, and no τ passes no gate.
TEST(LastCheckpointGateTest, AGateOnAReportWithoutTauFails) {
  json figures = stored_report(3.0, 1.5);
  figures.erase("candidate");
  figures.erase("reference_run");
  figures.erase("baseline");
  StageOutcome o = judge_last_checkpoint(figures, 2.0, std::nullopt);
  EXPECT_EQ(o.state, StageOutcome::State::kFailed);
  EXPECT_EQ(o.error, "gate failed: checkpoint-7 (the last checkpoint) has no τ: its stored report keeps no τ");
  EXPECT_EQ(o.metrics["gate_passed"], 0.0);
  EXPECT_EQ(o.outputs["tau"], "");

  json wrong = stored_report(3.0, 1.5);
  wrong["candidate"]["tau"] = "3";
  o = judge_last_checkpoint(wrong, std::nullopt, 1.0);
  EXPECT_EQ(o.state, StageOutcome::State::kFailed);
  EXPECT_NE(o.error.find("has no τ: the eval report's candidate.tau is a string"), std::string::npos) << o.error;

  o = judge_last_checkpoint(figures, std::nullopt, std::nullopt);
  EXPECT_EQ(o.state, StageOutcome::State::kSucceeded) << "no gate, nothing to fail: " << o.error;
  EXPECT_EQ(o.report["gate_message"],
            "checkpoint-7 (the last checkpoint) has no τ (its stored report keeps no τ); no gate set")
      << "passed with nothing asked is said, as the eval's own report says it";
  o = judge_last_checkpoint(stored_report(3.0, 1.5), std::nullopt, std::nullopt);
  EXPECT_EQ(o.report["gate_message"], "checkpoint-7 (the last checkpoint): no gate set");
}

}  // namespace
}  // namespace ferry
