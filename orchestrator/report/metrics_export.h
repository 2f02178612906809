// The metrics export of `ferry report --metrics FILE`: one flat row per figure, for
// people who plot elsewhere — every stage metric (bytes, rate, τ...) and, per
// evaluated checkpoint, its τ, the reference's τ and the speedup at its step.
// JSONL (one object a line) or CSV with a header. Drawn from a RunReport JSON
// (run_report.h). Any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ferry::report {

/// Columns: run, stage, step (empty for stage metrics), metric, value.
std::string metrics_jsonl(const nlohmann::json& report);
std::string metrics_csv(const nlohmann::json& report);

}  // namespace ferry::report
