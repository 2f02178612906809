// The runner of a stage attempt, from its resolved spec (stage_spec.h).
#pragma once

#include <memory>

#include "jobs/copy/copy_stage.h"
#include "jobs/stage_runner.h"
#include "jobs/stage_spec.h"

namespace ferry {

/// Kinds this build cannot run get a runner that fails with the reason.
std::shared_ptr<StageRunner> make_stage_runner(const StageSpec& stage, StageEnv& env, const AttemptId& id);

}  // namespace ferry
