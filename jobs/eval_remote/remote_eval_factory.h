// The runner of an eval stage on a host, from the stage's resolved inputs (see
// the scheduler's stage_inputs and jobs/stage_factory.h).
#pragma once

#include <memory>
#include <string>

#include "jobs/stage_runner.h"

namespace ferry {

/// The prefix of a `prompts:` value naming a coordinator file, shipped to the host.
inline constexpr const char* kCoordinatorPrefix = "coordinator:";

/// `engine`: the plugin spec without paths; target, drafter, reference and
/// prompts are taken from `inputs` as the host's paths (relative: to its workdir).
std::shared_ptr<StageRunner> make_remote_eval_stage(const std::string& host, const nlohmann::json& inputs,
                                                    nlohmann::json engine, StageEnv& env, const AttemptId& id);

}  // namespace ferry
