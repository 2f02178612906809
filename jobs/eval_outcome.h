// The stage outcome of an eval from the engine's result JSON (jobs/eval_plugin_api.h),
// the same whether the engine ran in the coordinator (eval_stage.h) or on a host
// (eval_remote/remote_eval_stage.h): τ and friends become metrics and outputs, the
// report is recorded as the eval.report event, a failed gate fails the stage.
// io thread (it writes through the StageEnv).
#pragma once

#include <string>

#include "jobs/stage_runner.h"

namespace ferry {

/// `append_text`: also append the readable report to the stage's log (a worker on
/// a host printed it into the job's log already). `cancelled`: the stage asked the
/// engine to stop, so a failure reads as a cancel.
StageOutcome eval_outcome(const std::string& result_json, bool cancelled, bool append_text, StageEnv& env);

}  // namespace ferry
