// The runners make_stage_runner builds from a resolved stage, through a scripted
// StageEnv: what a stage passes on that is not an input reaches the job it starts on
// its host. An eval on a host used to start its worker's job without the stage's
// log_max, so the worker's log on the host kept the 1 GiB default.
#include "jobs/stage_factory.h"

#include <gtest/gtest.h>

#include "jobs/eval/stage/remote/remote_eval_stage.h"
#include "tests/support/scripted_stage_env.h"

namespace ferry {
namespace {

TEST(StageFactoryTest, AnEvalOnAHostStartsItsWorkerWithTheStagesLogMaxAndNamesTheHost) {
  nlohmann::json started;
  // Every call fails at once: the eval goes as far as its job and ends there.
  testing::ScriptedStageEnv env([&](const std::string& op, const nlohmann::json& args) -> Result<protocol::Frame> {
    if (op == "job.start") started = args;
    return invalid_argument("scripted: no " + op + " here");
  });
  StageSpec s;
  s.name = "ev";
  s.host = "gpu";
  s.log_max = int64_t{5} << 20;
  EvalStageSpec e;
  e.target = "t";
  e.drafter = "d";
  e.prompts = "p.jsonl";
  e.env = {{kInstalledWorkerVar, "/opt/ferry-eval"}};  // installed there: nothing to send
  s.spec = e;
  auto runner = make_stage_runner(s, env, AttemptId{"run-1.ev", 1, "token"});
  bool done = false;
  runner->start([&](StageOutcome) { done = true; });
  env.io().run();
  EXPECT_TRUE(done);
  ASSERT_TRUE(started.is_object()) << "no job.start";
  EXPECT_EQ(started["log_max"], int64_t{5} << 20);
  // The worker's spec names the host, which its report carries (a sharded eval's merge names it).
  bool named = false;
  for (const auto& [type, detail] : env.events) {
    if (type == "eval.started") named = nlohmann::json::parse(detail)["spec"]["host"] == "gpu";
  }
  EXPECT_TRUE(named);
}

// A watching eval has a host and a merge has none: neither is taken for a plain eval
// on a host or in the coordinator.
TEST(StageFactoryTest, EachEvalModeIsToldApart) {
  EvalStageSpec plain;
  EXPECT_EQ(eval_mode(plain, ""), EvalMode::kLocal);
  EXPECT_EQ(eval_mode(plain, "gpu"), EvalMode::kRemote);
  EvalStageSpec watching;
  watching.watch = WatchSpec{};
  EXPECT_EQ(eval_mode(watching, "gpu"), EvalMode::kWatch);
  EvalStageSpec merge;
  merge.shards = {"ev-shard-1-of-2", "ev-shard-2-of-2"};
  EXPECT_EQ(eval_mode(merge, ""), EvalMode::kMerge);
}

// `ferry resume` decides from the workflow's stage, before any runner exists, whether a
// running attempt is re-attached; that answer must be the one the runner the stage
// gets gives. Each of the six runners, from a stage and its resolved spec made alike.
TEST(StageFactoryTest, TheResumeAsksEachStageWhatItsRunnerAnswers) {
  testing::ScriptedStageEnv env;
  struct Case {
    const char* what;
    workflow::Stage stage;
    StageSpec spec;
    bool reattaches;
  };
  auto stage = [](workflow::StageKind kind, const std::string& host) {
    workflow::Stage s;
    s.name = "st";
    s.kind = kind;
    s.host = host;
    return s;
  };
  auto spec = [](const std::string& host, auto kind_spec) {
    StageSpec s;
    s.name = "st";
    s.host = host;
    s.spec = kind_spec;
    return s;
  };
  EvalStageSpec eval;
  EvalStageSpec watching;
  watching.watch = WatchSpec{};
  EvalStageSpec merge;
  merge.shards = {"st-shard-1-of-2", "st-shard-2-of-2"};
  std::vector<Case> cases = {
      {"a command", stage(workflow::StageKind::kCommand, "cpu"), spec("cpu", CommandStageSpec{}), true},
      {"a copy", stage(workflow::StageKind::kCopy, ""), spec("", CopyStageSpec{}), true},
      {"an eval in the coordinator", stage(workflow::StageKind::kEval, ""), spec("", eval), false},
      {"an eval on a host", stage(workflow::StageKind::kEval, "gpu"), spec("gpu", eval), true},
      {"a watching eval", stage(workflow::StageKind::kEval, "gpu"), spec("gpu", watching), true},
      {"a sharded eval's merge", stage(workflow::StageKind::kEval, ""), spec("", merge), false},
  };
  cases[4].stage.watch.stage = "train";
  cases[5].stage.shards = merge.shards;
  for (const auto& c : cases) {
    auto runner = make_stage_runner(c.spec, env, AttemptId{"run-1.st", 1, "token"});
    EXPECT_EQ(runner->reattaches(), c.reattaches) << c.what;
    EXPECT_EQ(stage_reattaches(c.stage), c.reattaches) << c.what;
  }
}

}  // namespace
}  // namespace ferry
