#include "jobs/eval/stage/eval_outcome.h"

#include <iomanip>
#include <sstream>

#include "base/peer_json.h"

namespace ferry {
namespace {

// Metric names become CSV cells and column names (`ferry report --metrics`):
// anything but [A-Za-z0-9_.-] becomes '_'.
std::string metric_name(const std::string& key) {
  std::string out = key.substr(0, kMaxMetricNameBytes);
  for (char& c : out) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

// The report as the event row keeps it: at most kMaxStoredResponses responses,
// and at most kMaxStoredReportBytes in all (past that, its per-prompt parts go,
// then everything but its figures); `dropped` says what went.
nlohmann::json bounded_report(nlohmann::json report) {
  if (!report.is_object()) return report;
  nlohmann::json dropped = nlohmann::json::object();
  auto it = report.find("responses");
  if (it != report.end() && it->is_array() && it->size() > kMaxStoredResponses) {
    dropped["responses"] = it->size() - kMaxStoredResponses;
    it->erase(it->begin() + static_cast<std::ptrdiff_t>(kMaxStoredResponses), it->end());
  }
  auto size = [](const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).size();
  };
  size_t bytes = size(report);
  if (bytes > kMaxStoredReportBytes) {
    for (const char* per_prompt : {"responses", "diff"}) {
      if (report.erase(per_prompt) > 0) dropped[per_prompt] = "all";
    }
    bytes = size(report);
  }
  if (bytes > kMaxStoredReportBytes) {
    nlohmann::json figures = nlohmann::json::object();
    for (auto& [k, v] : report.items()) {
      if (v.is_number() || v.is_boolean()) figures[k] = v;
    }
    figures["dropped"] = {{"report", "all but its top-level figures"}, {"bytes", bytes}};
    return figures;
  }
  if (!dropped.empty()) report["dropped"] = dropped;
  return report;
}

StageOutcome failed(const std::string& why, bool cancelled) {
  StageOutcome o;
  o.error = why;
  if (cancelled) {
    o.state = StageOutcome::State::kCancelled;
    o.error = "cancelled";
  }
  return o;
}

// "" when `r[key]` is missing or of type `want`, else what it is instead.
std::string wrong_type(const nlohmann::json& r, const char* key, nlohmann::json::value_t want) {
  auto it = r.find(key);
  if (it == r.end() || it->type() == want) return "";
  return std::string("the eval result's '") + key + "' is " + json_type_phrase(*it) + ", not " +
         json_type_phrase(nlohmann::json(want));
}

}  // namespace

std::map<std::string, std::string> eval_outputs(const std::map<std::string, double>& metrics) {
  std::map<std::string, std::string> out;
  for (const char* key : {"tau", "reference_tau", "speedup"}) {
    auto it = metrics.find(key);
    std::ostringstream s;
    if (it != metrics.end()) s << std::setprecision(6) << it->second;
    out[key] = s.str();
  }
  return out;
}

StageOutcome eval_outcome(const std::string& result_json, bool cancelled, bool append_text, StageEnv& env) {
  using T = nlohmann::json::value_t;
  auto parsed = parse_peer_json(result_json, "the eval result");
  if (!parsed.ok()) return failed(parsed.status().message(), cancelled);
  const nlohmann::json& r = *parsed;
  if (!r.is_object()) return failed("the eval result is " + json_type_phrase(r) + ", not an object", cancelled);
  const std::pair<const char*, T> kTypes[] = {{"ok", T::boolean},
                                              {"error", T::string},
                                              {"text", T::string},
                                              {"gate_passed", T::boolean},
                                              {"gate_message", T::string}};
  for (const auto& [key, type] : kTypes) {
    std::string why = wrong_type(r, key, type);
    if (!why.empty()) return failed(why, cancelled);
  }
  if (!r.contains("ok")) return failed("the eval result has no 'ok'", cancelled);
  if (!r["ok"].get<bool>()) return failed(str_field(r, "error", "eval failed"), cancelled);
  // The engine always gives its verdict: a result without one passes no gate.
  if (!r.contains("gate_passed")) return failed("the eval result has no 'gate_passed'", cancelled);

  StageOutcome o;
  size_t metrics_dropped = 0;
  for (auto& [k, v] : obj_field(r, "metrics").items()) {
    if (!v.is_number()) continue;
    if (o.metrics.size() >= kMaxMetrics) {
      ++metrics_dropped;
      continue;
    }
    o.metrics[metric_name(k)] = v.get<double>();
  }
  if (metrics_dropped > 0) {
    env.note("kept the eval's first " + std::to_string(kMaxMetrics) + " metrics; dropped " +
             std::to_string(metrics_dropped));
  }
  o.outputs = eval_outputs(o.metrics);
  o.report = bounded_report(r.contains("report") ? r["report"] : nlohmann::json());
  if (append_text) {
    Status s = env.append_log(str_field(r, "text") + "\n");
    // The report is in the store either way; the watcher hears the log lacks it.
    if (!s.ok()) env.note("report not kept in the log: " + s.message());
  }
  env.record_event("eval.report", o.report);
  if (r["gate_passed"].get<bool>()) {
    o.state = StageOutcome::State::kSucceeded;
  } else {
    o.state = StageOutcome::State::kFailed;
    o.error = "gate failed: " + str_field(r, "gate_message");
  }
  return o;
}

}  // namespace ferry
