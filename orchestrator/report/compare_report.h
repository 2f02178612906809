// `ferry report RUN_A RUN_B ...`: several runs' evals on one page — τ per checkpoint
// step of each run (and its reference) on one chart, each run's newest eval with its
// dataset table, and the drafter diff between the first run's last checkpoint and
// each other run's (drafter_diff.h, when the checkpoints are on this machine: an
// eval in the coordinator, or on a local host's workdir), and the newest evals' inputs
// by content side by side (inputs_table.h). The data is each run's RunReport
// (run_report.h) plus the diffs and the inputs; the page is drawn like the one-run page
// (html_report.h: self-contained, no script, every fetch forbidden). Reads only.
// Any thread that owns the Store.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "orchestrator/store.h"

namespace ferry::report {

inline constexpr const char* kCompareFormat = "ferry-compare/1";
/// The element id of the chart with every run's τ curve (data-series: the run's id,
/// "ID reference", and "ID DATASET" for an eval of named datasets).
inline constexpr const char* kTauCurvesId = "tau-curves";

/// `runs` as Store::find_run takes them (ids or "last"); `ferry_home` places a local
/// host's default workdir, where its checkpoints are.
Result<nlohmann::json> collect_compare_report(Store& store, const std::vector<std::string>& runs,
                                              const std::string& ferry_home);

std::string render_compare_report(const nlohmann::json& report);

/// The checkpoint folder `drafter` (as an eval of `stage` reported it) on this
/// machine, from the run's workflow: as is when absolute, in the coordinator's
/// workflow folder for an eval without a host, in a local host's workdir; an error
/// naming the host when the checkpoint is on a remote one.
Result<std::string> local_checkpoint_path(const nlohmann::json& run, const std::string& stage,
                                          const std::string& drafter, const std::string& ferry_home);

}  // namespace ferry::report
