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

}  // namespace
}  // namespace ferry
