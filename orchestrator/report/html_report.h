// The HTML page of `ferry report`: one self-contained file drawn from a RunReport
// JSON (run_report.h) — inline CSS and SVG only, no script, and a Content-Security-
// Policy that forbids every fetch, so it opens offline and cannot phone home. All
// text from the run is escaped (html_escape.h). Any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "jobs/eval/run/drafter_diff.h"

namespace ferry::report {

/// Element ids a reader (or a test) can look for: the stage timeline, the τ curve,
/// the acceptance-length histogram, acceptance by block position.
inline constexpr const char* kTimelineId = "timeline";
inline constexpr const char* kTauCurveId = "tau-curve";
inline constexpr const char* kHistogramId = "acceptance-histogram";
inline constexpr const char* kPositionsId = "acceptance-by-position";

std::string render_html_report(const nlohmann::json& report);

/// The page's head up to <body>: the policy, the style, `title` (escaped). Shared by
/// the pages of several runs side by side (compare_report.h).
std::string html_page_start(const std::string& title);

/// Two drafters' diff as two tables (config fields, then tensors with an issue),
/// after `heading` (markup); `a` and `b` name the two columns.
std::string drafter_diff_html(const eval::DrafterDiff& diff, const std::string& heading, const std::string& a,
                              const std::string& b);

}  // namespace ferry::report
