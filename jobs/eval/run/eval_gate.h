// The gate's verdict on an eval report: τ at least min_tau, τ over the reference's
// at least min_ratio_to_reference. Applied by the runner to a whole eval and by the
// shard merge to the merged report (a shard is never judged alone). Plain function.
#pragma once

#include <optional>

#include "jobs/eval/run/eval_report.h"

namespace ferry::eval {

/// Sets report->gate_passed and gate_message; every failed condition is named.
void judge_gate(std::optional<double> min_tau, std::optional<double> min_ratio_to_reference, EvalReport* report);

}  // namespace ferry::eval
