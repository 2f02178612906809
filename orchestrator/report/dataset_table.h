// The eval figures per dataset on the report page (an eval of named datasets,
// jobs/eval/run/eval_datasets.h): the table with datasets as columns, as the DFlash
// paper lays it out, and τ per checkpoint step for each dataset (a watch). Plain
// functions; any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/eval/run/eval_report.h"
#include "orchestrator/report/svg_chart.h"

namespace ferry::report {

/// Element ids: the τ-per-dataset chart and the dataset table.
inline constexpr const char* kDatasetTauId = "tau-per-dataset";
inline constexpr const char* kDatasetTableId = "datasets";

/// A colour per series, the same on every chart of a page (the k-th dataset, run...).
const char* series_color(size_t k);

/// A point's datasets as run_report.cc stores them with each eval: [{name, tau,
/// reference_tau}]; empty for an eval of one file.
nlohmann::json dataset_points(const eval::EvalReport& report);

/// The table: a column per dataset, a row per figure (prompts, τ, reference τ, ratio,
/// speedup, acceptance rate); `id` the table's element id. "" without datasets.
std::string dataset_table_html(const eval::EvalReport& report, const std::string& id = kDatasetTableId);

/// The x of each eval's point: its step when every point names one (`steps`), else
/// its place (1, 2, ...).
bool every_point_has_a_step(const nlohmann::json& evals);
/// The frame of a τ-per-checkpoint chart (960 wide; x: step, or eval when not `steps`).
ChartFrame tau_frame(const std::string& id, const std::string& title, bool steps);
/// The candidate's τ (into `cand`) and the reference's (into `ref`) per point.
void tau_points(const nlohmann::json& evals, bool steps, ChartSeries* cand, ChartSeries* ref);

/// τ per checkpoint step, one series per dataset (data-series = the dataset's name),
/// from the evals' points (run_report.cc); "" when no eval has datasets. `prefix`
/// goes before each series' name (a run's id when several runs share the chart).
std::vector<ChartSeries> dataset_tau_series(const nlohmann::json& evals, const std::string& prefix, size_t first_color);
std::string dataset_tau_chart(const nlohmann::json& evals);

}  // namespace ferry::report
