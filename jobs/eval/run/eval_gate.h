// The gate's verdict on an eval report: τ at least min_tau, τ over the reference's
// at least min_ratio_to_reference. Applied by the runner to a whole eval and by the
// shard merge to the merged report (a shard is never judged alone); deferred by the
// runner when the gate is judged on another eval (a watch's last checkpoint). Plain
// functions.
#pragma once

#include <optional>
#include <string>

#include "jobs/eval/run/eval_report.h"

namespace ferry::eval {

/// Sets report->gate_passed and gate_message; every failed condition is named.
void judge_gate(std::optional<double> min_tau, std::optional<double> min_ratio_to_reference, EvalReport* report);

/// No verdict on this report: its gate is judged elsewhere, as `words` say ("judged on
/// the last checkpoint"). The report passes, so the eval that made it succeeds.
void defer_gate(const std::string& words, EvalReport* report);

}  // namespace ferry::eval
