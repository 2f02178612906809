// RunReport: what `ferry report` shows, gathered from the Store into one JSON value
// (`ferry report --json` prints it; the HTML page and the metrics export are drawn
// from it): the run and its stages with every attempt and each drop of a host, the
// copies (bytes, route, rate), one point per eval (τ of candidate and reference at
// the checkpoint's step, and its gate: passed, failed, or a watch's "judged on the last
// checkpoint") and the newest eval's full report, with its stage's verdict when the
// stage judged it (a watch's eval.gate). Reads only. Any thread that owns the Store.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "orchestrator/store.h"

namespace ferry::report {

inline constexpr const char* kReportFormat = "ferry-report/1";

/// `run` as Store::find_run takes it (an id or "last").
Result<nlohmann::json> collect_run_report(Store& store, const std::string& run);

/// The training step of an evaluated checkpoint: the event's "step" when the eval
/// recorded one, else the number in a "checkpoint-N" (or "step-N", "step_N")
/// component of the drafter path; nullopt when neither says.
std::optional<int64_t> checkpoint_step(const nlohmann::json& eval_event_detail);

}  // namespace ferry::report
