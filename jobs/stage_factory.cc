#include "jobs/stage_factory.h"

#include "jobs/immediate_stage.h"

namespace ferry {

std::shared_ptr<StageRunner> make_stage_runner(const workflow::Stage& stage, const nlohmann::json& inputs,
                                               StageEnv& env) {
  StageOutcome o;
  if (stage.kind == workflow::StageKind::kCopy) {
    o.error = "copy stages are not implemented in this build yet";
  } else {
    o.error = "eval stages need a build with libtorch (FERRY_WITH_TORCH=ON)";
  }
  return std::make_shared<ImmediateStage>(env, o);
}

}  // namespace ferry
