#include "jobs/eval_outcome.h"

#include <iomanip>
#include <sstream>

namespace ferry {

StageOutcome eval_outcome(const std::string& result_json, bool cancelled, bool append_text, StageEnv& env) {
  StageOutcome o;
  auto r = nlohmann::json::parse(result_json, nullptr, false);
  if (r.is_discarded() || !r.is_object() || !r.value("ok", false)) {
    o.error = r.is_discarded() || !r.is_object() ? "the eval engine returned bad JSON"
                                                  : r.value("error", std::string("eval failed"));
    if (cancelled) {
      o.state = StageOutcome::State::kCancelled;
      o.error = "cancelled";
    }
    return o;
  }
  if (r.contains("metrics") && r["metrics"].is_object()) {
    for (auto& [k, v] : r["metrics"].items()) {
      if (v.is_number()) o.metrics[k] = v.get<double>();
    }
  }
  auto fmt = [](double x) {
    std::ostringstream s;
    s << std::setprecision(6) << x;
    return s.str();
  };
  for (const char* key : {"tau", "reference_tau", "speedup"}) {
    auto it = o.metrics.find(key);
    o.outputs[key] = it == o.metrics.end() ? "" : fmt(it->second);
  }
  o.report = r.value("report", nlohmann::json());
  if (append_text) {
    Status s = env.append_log(r.value("text", std::string()) + "\n");
    // The report is in the store either way; the watcher hears the log lacks it.
    if (!s.ok()) env.note("report not kept in the log: " + s.message());
  }
  env.record_event("eval.report", o.report);
  if (r.value("gate_passed", true)) {
    o.state = StageOutcome::State::kSucceeded;
  } else {
    o.state = StageOutcome::State::kFailed;
    o.error = "gate failed: " + r.value("gate_message", std::string());
  }
  return o;
}

}  // namespace ferry
