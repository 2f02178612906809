// The runner for a non-command stage kind (copy, eval), from its resolved inputs.
#pragma once

#include <memory>

#include "jobs/stage_runner.h"
#include "workflows/model.h"

namespace ferry {

/// `inputs` holds the stage's fields with templates expanded (see the
/// scheduler's stage_inputs). Kinds this build cannot run get a runner that
/// fails with the reason.
std::shared_ptr<StageRunner> make_stage_runner(const workflow::Stage& stage, const nlohmann::json& inputs,
                                               StageEnv& env, const AttemptId& id);

}  // namespace ferry
