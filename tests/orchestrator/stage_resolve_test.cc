// A stage's templates resolved without a Scheduler (orchestrator/stage_resolve.h):
// params from the run, a host's workdir, an upstream stage's output (shell-quoted in
// a `run:` script, as it is), the job's FERRY_* env, and the upstream outputs as the
// stage's inputs; a missing output is an error that names the file, line and stage.
#include "orchestrator/stage_resolve.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "workflows/parser.h"

namespace ferry {
namespace {

constexpr const char* kWorkflow = R"(name: resolve
params:
  steps: "10"
  root: ""
hosts:
  trainer: {transport: ssh, address: 198.18.0.2, workdir: /srv/ferry}
  evaluator: {transport: ssh, address: 198.18.0.3, workdir: /srv/ferry}
stages:
  count:
    host: trainer
    run: echo n=3 > "$FERRY_OUTPUTS"
    outputs: [n]
  half:
    host: trainer
    needs: [count]
    run: echo ${{ params.steps }} ${{ stages.count.outputs.n }} ${{ hosts.trainer.workdir }}
  ship:
    kind: copy
    needs: [count]
    from: trainer:ckpt
    to: evaluator:${{ params.root }}${{ stages.count.outputs.n }}
)";

class StageResolveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto wf = workflow::parse_workflow("/wf/resolve.yaml", kWorkflow);
    ASSERT_TRUE(wf.ok()) << wf.status().message();
    wf_ = std::move(*wf);
    run_.id = "resolve-7";
    run_.workflow_path = "/wf/resolve.yaml";
    run_.params = {{"steps", "20"}};
  }
  ResolveContext context() {
    return ResolveContext{wf_, run_, "/home/u/.ferry",
                          [this](const std::string& stage) -> const std::map<std::string, std::string>* {
                            auto it = outputs_.find(stage);
                            return it == outputs_.end() ? nullptr : &it->second;
                          }};
  }
  const workflow::Stage& stage(const std::string& name) {
    for (const auto& s : wf_.stages) {
      if (s.name == name) return s;
    }
    ADD_FAILURE() << "no stage " << name;
    return wf_.stages.front();
  }

  workflow::Workflow wf_;
  RunRecord run_;
  std::map<std::string, std::map<std::string, std::string>> outputs_ = {{"count", {}}, {"half", {}}, {"ship", {}}};
};

TEST_F(StageResolveTest, ParamsHostsAndUpstreamOutputsFillAStageAndAreItsInputs) {
  outputs_["count"]["n"] = "3; touch /tmp/x";
  auto spec = resolve_stage(context(), stage("half"));
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const auto* c = std::get_if<CommandStageSpec>(&spec->spec);
  ASSERT_NE(c, nullptr);
  // The run's param wins over the default; every value arrives single-quoted, a
  // host's never as code.
  EXPECT_EQ(c->command, "echo '20' '3; touch /tmp/x' '/srv/ferry'") << c->command;
  EXPECT_EQ(c->env.at("FERRY_RUN_ID"), "resolve-7");
  EXPECT_EQ(c->env.at("FERRY_STAGE"), "half");
  EXPECT_EQ(c->env.at("FERRY_WORKDIR"), "/srv/ferry");
  EXPECT_EQ(spec->upstream.at("count").at("n"), "3; touch /tmp/x");
  // Another upstream output, another input hash: resume runs the stage again.
  const std::string before = stage_inputs_hash(*spec);
  outputs_["count"]["n"] = "4";
  auto again = resolve_stage(context(), stage("half"));
  ASSERT_TRUE(again.ok());
  EXPECT_NE(stage_inputs_hash(*again), before);
}

TEST_F(StageResolveTest, AnOutputNotProducedYetIsAnErrorNamingTheStageAndItsPlace) {
  auto spec = resolve_stage(context(), stage("half"));
  ASSERT_FALSE(spec.ok());
  const std::string& m = spec.status().message();
  EXPECT_NE(m.find("/wf/resolve.yaml:"), std::string::npos) << m;
  EXPECT_NE(m.find("stage 'half'"), std::string::npos) << m;
  EXPECT_NE(m.find("stage 'count' produced no output 'n'"), std::string::npos) << m;
}

// Review N1: a host writes its outputs, so one that opens a copy root may not name
// an absolute folder (~/.ssh); the workflow's own prefix, a param's too, confines it.
TEST_F(StageResolveTest, ACopyRootThatOpensWithAnAbsoluteHostOutputIsRefused) {
  outputs_["count"]["n"] = "/home/u/.ssh";
  auto refused = resolve_stage(context(), stage("ship"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("to '/home/u/.ssh' begins with the output 'n' of stage 'count'"),
            std::string::npos)
      << refused.status().message();

  // keep_local's ~/ is the coordinator's home: as absolute as /.
  outputs_["count"]["n"] = "~/.ssh";
  refused = resolve_stage(context(), stage("ship"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("to '~/.ssh' begins with the output 'n' of stage 'count'"),
            std::string::npos)
      << refused.status().message();

  outputs_["count"]["n"] = "/home/u/.ssh";
  run_.params["root"] = "/data/";
  auto under_a_param = resolve_stage(context(), stage("ship"));
  ASSERT_TRUE(under_a_param.ok()) << under_a_param.status().message();
  EXPECT_EQ(std::get<CopyStageSpec>(under_a_param->spec).to, "/data//home/u/.ssh");

  run_.params["root"] = "";
  outputs_["count"]["n"] = "ckpts/3";
  auto relative = resolve_stage(context(), stage("ship"));
  ASSERT_TRUE(relative.ok()) << relative.status().message();
  EXPECT_EQ(std::get<CopyStageSpec>(relative->spec).to, "ckpts/3");
}

}  // namespace
}  // namespace ferry
