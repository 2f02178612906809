#include "jobs/eval/stage/watch/last_checkpoint_gate.h"

#include "base/peer_json.h"
#include "jobs/eval/run/eval_gate.h"
#include "jobs/eval/run/eval_report_json.h"
#include "jobs/eval/stage/eval_outcome.h"

namespace ferry {

StageOutcome judge_last_checkpoint(const nlohmann::json& stored, std::optional<double> min_tau,
                                   std::optional<double> min_ratio_to_reference) {
  const std::string checkpoint = str_field(stored, "checkpoint", "the last checkpoint");
  const std::string which = checkpoint + " (the last checkpoint)";
  StageOutcome o;
  o.report = stored;
  Result<eval::EvalReport> read = eval::eval_report_from_json(stored);
  // A report over the store's cap keeps only its top-level figures (eval_outcome.h): no τ.
  const bool has_tau = read.ok() && obj_field(stored, "candidate").contains("tau");
  bool passed = false;
  std::string message;
  if (has_tau) {
    eval::EvalReport r = std::move(*read);
    r.gate_deferred.clear();
    eval::judge_gate(min_tau, min_ratio_to_reference, &r);
    o.metrics = r.metrics();
    passed = r.gate_passed;
    message = r.gate_message.empty() ? "" : which + ": " + r.gate_message;
  } else {
    const std::string why = read.ok() ? "its stored report keeps no τ" : read.status().message();
    passed = !min_tau && !min_ratio_to_reference;  // no τ passes no gate
    message = passed ? which + " has no τ (" + why + "); no gate set" : which + " has no τ: " + why;
    o.metrics["gate_passed"] = passed ? 1.0 : 0.0;
  }
  o.outputs = eval_outputs(o.metrics);
  if (o.report.is_object()) {
    o.report.erase("gate_deferred");
    o.report["gate_passed"] = passed;
    o.report["gate_message"] = message;
  }
  o.state = passed ? StageOutcome::State::kSucceeded : StageOutcome::State::kFailed;
  if (!passed) o.error = "gate failed: " + message;
  return o;
}

}  // namespace ferry
