#include "orchestrator/report/compare_report.h"

#include <chrono>

#include "base/peer_json.h"
#include "jobs/eval/run/drafter_diff.h"
#include "jobs/eval/run/eval_report_json.h"
#include "orchestrator/report/dataset_table.h"
#include "orchestrator/report/html_escape.h"
#include "orchestrator/report/html_report.h"
#include "orchestrator/report/inputs_table.h"
#include "orchestrator/report/run_report.h"
#include "orchestrator/report/svg_chart.h"
#include "orchestrator/status_view.h"
#include "orchestrator/workflow_paths.h"
#include "workflows/parser.h"

namespace ferry::report {
namespace {

using nlohmann::json;

std::string e(const std::string& s) { return html_escape(s); }

std::string run_id(const json& report) { return str_field(report["run"], "id"); }

// The newest eval's checkpoint of a run: its drafter and stage ("" when none).
std::pair<std::string, std::string> last_checkpoint(const json& report) {
  const json& evals = report["evals"];
  if (!evals.is_array() || evals.empty()) return {"", ""};
  return {str_field(evals.back(), "drafter"), str_field(evals.back(), "stage")};
}

// The diff between run a's last checkpoint and run b's, or why there is none.
json diff_entry(const json& a, const json& b, const std::string& ferry_home) {
  json out = {{"a", run_id(a)}, {"b", run_id(b)}};
  const auto [drafter_a, stage_a] = last_checkpoint(a);
  const auto [drafter_b, stage_b] = last_checkpoint(b);
  out["a_drafter"] = drafter_a;
  out["b_drafter"] = drafter_b;
  if (drafter_a.empty() || drafter_b.empty()) {
    out["error"] = "run " + (drafter_a.empty() ? run_id(a) : run_id(b)) + " has no evaluated checkpoint";
    return out;
  }
  auto path_a = local_checkpoint_path(a["run"], stage_a, drafter_a, ferry_home);
  auto path_b = local_checkpoint_path(b["run"], stage_b, drafter_b, ferry_home);
  if (!path_a.ok() || !path_b.ok()) {
    out["error"] = (!path_a.ok() ? path_a : path_b).status().message();
    return out;
  }
  auto diff = eval::diff_drafters(*path_a, *path_b);
  if (!diff.ok()) {
    out["error"] = diff.status().message();
    return out;
  }
  out["diff"] = diff->to_json();
  return out;
}

// Every run's τ per step on one chart: candidate, reference and each dataset's.
std::string tau_curves(const json& runs) {
  std::vector<ChartSeries> series;
  bool steps = true;
  for (const auto& r : runs) steps = steps && every_point_has_a_step(r["evals"]);
  for (size_t k = 0; k < runs.size(); ++k) {
    const std::string id = run_id(runs[k]);
    ChartSeries cand{id, series_color(2 * k), {}}, ref{id + " reference", series_color(2 * k + 1), {}};
    tau_points(runs[k]["evals"], steps, &cand, &ref);
    series.push_back(cand);
    if (!ref.points.empty()) series.push_back(ref);
    for (auto& d : dataset_tau_series(runs[k]["evals"], id + " ", 2 * runs.size() + k)) series.push_back(d);
  }
  ChartFrame f = tau_frame(kTauCurvesId, "τ per checkpoint, run by run", steps);
  f.height = 320;
  return svg_line_chart(f, series);
}

// One row per run: its newest eval's figures and verdict.
std::string runs_table(const json& runs) {
  std::string s =
      "<table id=\"runs\"><tr><th>run</th><th>workflow</th><th>state</th><th class=\"num\">checkpoints</th>"
      "<th>last drafter</th><th class=\"num\">τ</th><th class=\"num\">reference τ</th>"
      "<th class=\"num\">speedup</th><th>gate</th></tr>";
  for (const auto& r : runs) {
    const json& evals = r["evals"];
    const json last = evals.empty() ? json::object() : evals.back();
    auto num = [&](const char* key, const char* fmt, const char* unit = "") {
      return last.contains(key) && last[key].is_number() ? format_number(last[key].get<double>(), fmt) + unit : "-";
    };
    s += "<tr class=\"run\"><td>" + e(run_id(r)) + "</td><td>" + e(str_field(r["run"], "workflow")) +
         "</td><td class=\"state-" + e(str_field(r["run"], "state")) + "\">" + e(str_field(r["run"], "state")) +
         "</td><td class=\"num\">" + std::to_string(evals.size()) + "</td><td>" + e(str_field(last, "drafter")) +
         "</td><td class=\"num\">" + num("tau", "%.3f") + "</td><td class=\"num\">" + num("reference_tau", "%.3f") +
         "</td><td class=\"num\">" + num("speedup", "%.2f", "×") + "</td><td>" + e(str_field(last, "gate")) +
         "</td></tr>";
  }
  return s + "</table>";
}

// Each run's newest eval, its datasets as columns.
std::string dataset_tables(const json& runs) {
  std::string s;
  for (const auto& r : runs) {
    if (!r["eval"].is_object()) continue;
    auto ev = eval::eval_report_from_json(r["eval"]);
    if (!ev.ok() || ev->datasets.empty()) continue;
    s += "<h3>" + e(run_id(r)) + ": newest eval by dataset</h3>" + dataset_table_html(*ev, "datasets-" + run_id(r));
  }
  return s;
}

std::string diffs_section(const json& diffs) {
  std::string s;
  for (const auto& d : diffs) {
    const std::string a = str_field(d, "a"), b = str_field(d, "b");
    const std::string heading = "<h3>Last checkpoints: " + e(a) + " vs " + e(b) + "</h3><p class=\"sub\"><code>" +
                                e(str_field(d, "a_drafter")) + "</code> vs <code>" + e(str_field(d, "b_drafter")) +
                                "</code></p>";
    if (d.contains("error")) {
      s += heading + "<p class=\"diff-unavailable\">no diff: " + e(str_field(d, "error")) + "</p>";
      continue;
    }
    auto diff = eval::drafter_diff_from_json(d["diff"]);
    if (!diff.ok()) {
      s += heading + "<p class=\"diff-unavailable\">no diff: " + e(diff.status().message()) + "</p>";
      continue;
    }
    s += drafter_diff_html(*diff, heading, a, b);
  }
  return s;
}

}  // namespace

Result<std::string> local_checkpoint_path(const json& run, const std::string& stage, const std::string& drafter,
                                          const std::string& ferry_home) {
  const std::string workflow_path = str_field(run, "workflow");
  if (!drafter.empty() && drafter[0] == '/') return drafter;
  workflow::Diagnostics diagnostics(workflow_path);
  const workflow::Workflow wf =
      workflow::parse_workflow_collecting(workflow_path, str_field(run, "workflow_source"), &diagnostics);
  const workflow::Stage* s = wf.find_stage(stage);
  if (s == nullptr) {
    return not_found("run " + str_field(run, "id") + ": stage '" + stage + "' of checkpoint " + drafter +
                     " is not in its workflow");
  }
  if (s->host.empty()) return resolve_local_path(drafter, workflow_path);  // evaluated in the coordinator
  const workflow::Host* h = wf.find_host(s->host);
  if (h == nullptr || h->transport() != workflow::Transport::kLocal) {
    return not_found("run " + str_field(run, "id") + ": checkpoint " + drafter + " is on host '" + s->host +
                     "', not on this machine");
  }
  return resolve_host_workdir(*h, h->workdir.value, workflow_path, ferry_home) + "/" + drafter;
}

Result<json> collect_compare_report(Store& store, const std::vector<std::string>& runs, const std::string& ferry_home) {
  json out = {{"format", kCompareFormat},
              {"generated_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count()},
              {"runs", json::array()},
              {"diffs", json::array()}};
  for (const auto& r : runs) {
    auto one = collect_run_report(store, r);
    if (!one.ok()) return one.status();
    out["runs"].push_back(std::move(*one));
  }
  for (size_t k = 1; k < out["runs"].size(); ++k) {
    out["diffs"].push_back(diff_entry(out["runs"][0], out["runs"][k], ferry_home));
  }
  out["inputs"] = compare_inputs(out["runs"]);
  return out;
}

std::string render_compare_report(const json& report) {
  const json& runs = report["runs"];
  std::string ids;
  for (const auto& r : runs) ids += (ids.empty() ? "" : ", ") + run_id(r);
  std::string s = html_page_start("ferry report " + ids);
  s += "<h1>ferry runs " + e(ids) + " side by side</h1>";
  s += "<div class=\"sub\">report written " + e(local_time(int_field(report, "generated_ms"), "%Y-%m-%d %H:%M:%S")) +
       "</div>";
  s += "<h2>τ per checkpoint</h2>" + tau_curves(runs) + runs_table(runs);
  s += dataset_tables(runs);
  const json inputs = report.contains("inputs") ? report["inputs"] : json::array();
  if (!inputs.empty()) s += "<h2>Inputs of the newest evals, by content</h2>" + inputs_compare_html(inputs);
  s += "<h2>Drafter diff</h2>" + diffs_section(report["diffs"]);
  s += "\n</body></html>\n";
  return s;
}

}  // namespace ferry::report
