// The stage timeline of a run as an inline SVG Gantt chart: a row per stage, a bar
// per attempt coloured by how it ended (class "attempt", data-stage, data-attempt),
// host drops as hatched spans over the bar (class "drop"), and for a watching eval a
// tick where each checkpoint's report came in (class "evaluated"). Any thread.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ferry::report {

/// `run` as run_to_json writes it, each stage with "attempts" and "drops" (run_report.h);
/// attempts still running end at `now` (ms since the epoch).
std::string svg_timeline(const std::string& id, const nlohmann::json& run, int64_t now);

}  // namespace ferry::report
