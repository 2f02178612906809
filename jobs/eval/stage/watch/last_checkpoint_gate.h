// The verdict of a watching eval (checkpoint_watch_stage.h): the gate judged on the
// last checkpoint evaluated, from that checkpoint's report as the store keeps it (its
// eval.report event's detail). Judged from what is stored, not from what one attempt
// saw, so every attempt that evaluates nothing new — a retry, `ferry resume`, a
// re-attach after a coordinator crash — ends exactly as the one before it did.
// Fails closed: a gate on a report without τ (unreadable, or cut to its top-level
// figures) fails. Plain function, any thread.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "jobs/stage_runner.h"

namespace ferry {

/// What a watch's per-checkpoint evals say instead of a verdict (EvalSpec::gate_deferred).
inline constexpr const char* kJudgedOnTheLastCheckpoint = "judged on the last checkpoint";

/// The stage's outcome from the last checkpoint's stored report: its figures as
/// metrics (gate_passed the verdict's), tau / reference_tau / speedup as outputs, the
/// report with the verdict in place of "judged on the last checkpoint", and on a failed
/// gate the state failed and an error naming the checkpoint and every limit missed.
StageOutcome judge_last_checkpoint(const nlohmann::json& stored_report, std::optional<double> min_tau,
                                   std::optional<double> min_ratio_to_reference);

}  // namespace ferry
