// The stage outcome of an eval from the engine's result JSON (jobs/eval/run/eval_plugin_api.h),
// the same whether the engine ran in the coordinator (eval_stage.h) or on a host
// (eval_remote/remote_eval_stage.h): τ and friends become metrics and outputs, the
// report is recorded as the eval.report event, a failed gate fails the stage.
// The result is the host's word: JSON that is malformed, nested too deep, of the
// wrong types or without a gate verdict fails the stage with a message naming the
// field (never an exception, never a pass), and only a bounded part of the report
// is stored. io thread (it writes through the StageEnv).
#pragma once

#include <map>
#include <string>

#include "jobs/stage_runner.h"

namespace ferry {

/// What the eval.report event keeps of a report (the rest is dropped, and the
/// report's "dropped" field says what): its first responses, and at most this many
/// bytes in all.
inline constexpr size_t kMaxStoredResponses = 1000;
inline constexpr size_t kMaxStoredReportBytes = 32u << 20;
/// Metrics kept per eval, and the length of a metric's name.
inline constexpr size_t kMaxMetrics = 256;
inline constexpr size_t kMaxMetricNameBytes = 100;

/// `append_text`: also append the readable report to the stage's log (a worker on
/// a host printed it into the job's log already). `cancelled`: the stage asked the
/// engine to stop, so a failure reads as a cancel.
StageOutcome eval_outcome(const std::string& result_json, bool cancelled, bool append_text, StageEnv& env);

/// An eval's outputs from its metrics: tau, reference_tau and speedup, "" for one it lacks.
std::map<std::string, std::string> eval_outputs(const std::map<std::string, double>& metrics);

}  // namespace ferry
