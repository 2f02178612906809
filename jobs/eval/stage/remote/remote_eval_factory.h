// The runner of an eval stage on a host, from its resolved spec (jobs/stage_spec.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "jobs/stage_runner.h"
#include "jobs/stage_spec.h"

namespace ferry {

/// The prefix of a `prompts:` value naming a coordinator file, shipped to the host.
inline constexpr const char* kCoordinatorPrefix = "coordinator:";

/// target, drafter, reference and prompts are the host's paths (relative: to its workdir);
/// `log_max`: the cap of the worker's job log on the host, the stage's (`log_max`).
std::shared_ptr<StageRunner> make_remote_eval_stage(const std::string& host, const EvalStageSpec& eval, int64_t log_max,
                                                    StageEnv& env, const AttemptId& id);

}  // namespace ferry
