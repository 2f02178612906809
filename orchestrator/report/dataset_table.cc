#include "orchestrator/report/dataset_table.h"

#include <map>

#include "orchestrator/report/html_escape.h"

namespace ferry::report {
namespace {

using nlohmann::json;

std::string cell(const std::optional<double>& v, const char* fmt, const char* unit = "") {
  return "<td class=\"num\">" + (v ? format_number(*v, fmt) + unit : std::string("-")) + "</td>";
}

}  // namespace

bool every_point_has_a_step(const json& evals) {
  for (const auto& p : evals) {
    if (!p["step"].is_number()) return false;
  }
  return true;
}

ChartFrame tau_frame(const std::string& id, const std::string& title, bool steps) {
  ChartFrame f;
  f.id = id;
  f.title = title;
  f.x_label = steps ? "training step" : "eval";
  f.y_label = "τ (tokens per target forward)";
  f.width = 960;
  f.height = 300;
  return f;
}

void tau_points(const json& evals, bool steps, ChartSeries* cand, ChartSeries* ref) {
  double i = 0;
  for (const auto& p : evals) {
    const double x = steps ? p["step"].get<double>() : ++i;
    if (p["tau"].is_number()) cand->points.push_back({x, p["tau"].get<double>()});  // null: unreadable
    if (p["reference_tau"].is_number()) ref->points.push_back({x, p["reference_tau"].get<double>()});
  }
}

const char* series_color(size_t k) {
  static const char* const kColors[] = {"#3b7dd8", "#e08a2c", "#3a9d5d", "#b04fc4",
                                        "#d64545", "#1f9fb4", "#8c6d31", "#6b6ecf"};
  return kColors[k % (sizeof kColors / sizeof kColors[0])];
}

json dataset_points(const eval::EvalReport& report) {
  json out = json::array();
  for (const auto& d : report.datasets) {
    out.push_back(
        {{"name", d.name}, {"tau", d.tau}, {"reference_tau", d.reference_tau ? json(*d.reference_tau) : json()}});
  }
  return out;
}

std::string dataset_table_html(const eval::EvalReport& r, const std::string& id) {
  if (r.datasets.empty()) return "";
  std::string s = "<table id=\"" + html_escape(id) + "\" class=\"datasets\"><tr><th></th>";
  for (const auto& d : r.datasets) s += "<th class=\"num dataset\">" + html_escape(d.name) + "</th>";
  s += "</tr>";
  auto row = [&](const std::string& label, auto value) {
    s += "<tr><th>" + label + "</th>";
    for (const auto& d : r.datasets) s += value(d);
    s += "</tr>";
  };
  row("prompts", [](const eval::DatasetRow& d) { return cell(static_cast<double>(d.prompts), "%.0f"); });
  row("τ", [](const eval::DatasetRow& d) { return cell(d.tau, "%.3f"); });
  if (r.reference_run) {
    row("reference τ", [](const eval::DatasetRow& d) { return cell(d.reference_tau, "%.3f"); });
    row("ratio to reference", [](const eval::DatasetRow& d) { return cell(d.ratio_to_reference, "%.3f"); });
  }
  if (r.baseline) row("speedup", [](const eval::DatasetRow& d) { return cell(d.speedup, "%.2f", "×"); });
  row("acceptance rate", [](const eval::DatasetRow& d) { return cell(d.acceptance_rate, "%.3f"); });
  return s + "</table>";
}

std::vector<ChartSeries> dataset_tau_series(const json& evals, const std::string& prefix, size_t first_color) {
  std::vector<ChartSeries> out;
  std::map<std::string, size_t> index;  // dataset name → its series
  const bool steps = every_point_has_a_step(evals);
  double i = 0;
  for (const auto& p : evals) {
    const double x = steps ? p["step"].get<double>() : ++i;
    if (!p.contains("datasets") || !p["datasets"].is_array()) continue;
    for (const auto& d : p["datasets"]) {
      if (!d.is_object() || !d.contains("name") || !d["name"].is_string() || !d.contains("tau") ||
          !d["tau"].is_number()) {
        continue;
      }
      const std::string name = prefix + d["name"].get<std::string>();
      auto [it, added] = index.emplace(name, out.size());
      if (added) out.push_back({name, series_color(first_color + out.size()), {}});
      out[it->second].points.push_back({x, d["tau"].get<double>()});
    }
  }
  return out;
}

std::string dataset_tau_chart(const json& evals) {
  std::vector<ChartSeries> series = dataset_tau_series(evals, "", 0);
  if (series.empty()) return "";
  return svg_line_chart(tau_frame(kDatasetTauId, "τ per checkpoint, by dataset", every_point_has_a_step(evals)),
                        series);
}

}  // namespace ferry::report
