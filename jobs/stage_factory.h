// The runner for a non-command stage kind (copy, eval), from its resolved inputs.
#pragma once

#include <memory>

#include "jobs/copy/copy_stage.h"
#include "jobs/stage_runner.h"
#include "workflows/model.h"

namespace ferry {

/// `inputs` holds the stage's fields with templates expanded (see the
/// scheduler's stage_inputs). Kinds this build cannot run get a runner that
/// fails with the reason.
/// A copy's spec from resolved inputs (from_host, from, to_host, to, route, and the
/// route facts the scheduler adds: from_transport, to_address...).
CopySpec copy_spec(const nlohmann::json& inputs, StageEnv& env, const AttemptId& id);
/// The eval engine's spec without paths (max_new_tokens, block_size, gate...).
nlohmann::json eval_engine_spec(const nlohmann::json& inputs);

std::shared_ptr<StageRunner> make_stage_runner(const workflow::Stage& stage, const nlohmann::json& inputs,
                                               StageEnv& env, const AttemptId& id);

}  // namespace ferry
