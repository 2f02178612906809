#include "orchestrator/report/metrics_export.h"

#include <cstdio>
#include <vector>

namespace ferry::report {
namespace {

struct MetricRow {
  std::string stage;
  nlohmann::json step;  // null for a stage metric
  std::string metric;
  double value = 0;
};

std::vector<MetricRow> metric_rows(const nlohmann::json& report) {
  std::vector<MetricRow> rows;
  for (const auto& st : report["run"]["stages"]) {
    const nlohmann::json metrics = st.value("metrics", nlohmann::json::object());
    for (auto& [k, v] : metrics.items()) {
      if (v.is_number()) rows.push_back({st.value("name", std::string()), nullptr, k, v.get<double>()});
    }
  }
  for (const auto& p : report.value("evals", nlohmann::json::array())) {
    for (const char* k : {"tau", "reference_tau", "speedup", "ratio_to_reference"}) {
      if (p.contains(k) && p[k].is_number())
        rows.push_back({p.value("stage", std::string()), p["step"], k, p[k].get<double>()});
    }
  }
  return rows;
}

// RFC 4180: quoted when it holds a comma, quote or line break. A cell a
// spreadsheet would run as a formula (= + - @, or a tab or CR first) gets a
// leading ' (OWASP's CSV injection advice): names come from hosts.
std::string csv_field(const std::string& cell) {
  const bool formula = !cell.empty() && std::string("=+-@\t\r").find(cell[0]) != std::string::npos;
  const std::string s = formula ? "'" + cell : cell;
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string metrics_jsonl(const nlohmann::json& report) {
  const std::string run = report["run"].value("id", std::string());
  std::string out;
  for (const auto& r : metric_rows(report)) {
    nlohmann::json j = {{"run", run}, {"stage", r.stage}, {"step", r.step}, {"metric", r.metric}, {"value", r.value}};
    out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return out;
}

std::string metrics_csv(const nlohmann::json& report) {
  const std::string run = report["run"].value("id", std::string());
  std::string out = "run,stage,step,metric,value\n";
  for (const auto& r : metric_rows(report)) {
    char value[40];
    std::snprintf(value, sizeof value, "%.17g", r.value);
    out += csv_field(run) + "," + csv_field(r.stage) + "," + (r.step.is_number() ? r.step.dump() : "") + "," +
           csv_field(r.metric) + "," + value + "\n";
  }
  return out;
}

}  // namespace ferry::report
