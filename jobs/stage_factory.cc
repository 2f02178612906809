#include "jobs/stage_factory.h"

#include "jobs/copy/copy_stage.h"
#include "jobs/immediate_stage.h"

namespace ferry {

std::shared_ptr<StageRunner> make_stage_runner(const workflow::Stage& stage, const nlohmann::json& inputs,
                                               StageEnv& env) {
  StageOutcome o;
  if (stage.kind == workflow::StageKind::kCopy) {
    CopySpec spec;
    spec.from_host = inputs.value("from_host", std::string());
    spec.from_path = inputs.value("from", std::string());
    spec.to_host = inputs.value("to_host", std::string());
    spec.to_path = inputs.value("to", std::string());
    std::string keep = inputs.value("keep_local", std::string());
    spec.keep_local = keep.empty() ? "" : env.local_path(keep);
    spec.route = inputs.value("route", std::string("auto"));
    spec.streams = inputs.value("streams", 4);
    return std::make_shared<CopyStage>(env, spec);
  } else {
    o.error = "eval stages need a build with libtorch (FERRY_WITH_TORCH=ON)";
  }
  return std::make_shared<ImmediateStage>(env, o);
}

}  // namespace ferry
