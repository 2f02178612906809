// The HTML page of `ferry report`: one self-contained file drawn from a RunReport
// JSON (run_report.h) — inline CSS and SVG only, no script, and a Content-Security-
// Policy that forbids every fetch, so it opens offline and cannot phone home. All
// text from the run is escaped (html_escape.h). Any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ferry::report {

/// Element ids a reader (or a test) can look for: the stage timeline, the τ curve,
/// the acceptance-length histogram, acceptance by block position.
inline constexpr const char* kTimelineId = "timeline";
inline constexpr const char* kTauCurveId = "tau-curve";
inline constexpr const char* kHistogramId = "acceptance-histogram";
inline constexpr const char* kPositionsId = "acceptance-by-position";

std::string render_html_report(const nlohmann::json& report);

}  // namespace ferry::report
