#include "jobs/eval/run/eval_gate.h"

#include <sstream>
#include <string>
#include <vector>

namespace ferry::eval {

void judge_gate(std::optional<double> min_tau, std::optional<double> min_ratio_to_reference, EvalReport* report) {
  std::vector<std::string> failures;
  if (min_tau && report->candidate.tau < *min_tau) {
    std::ostringstream f;
    f << "tau " << report->candidate.tau << " < min_tau " << *min_tau;
    failures.push_back(f.str());
  }
  if (min_ratio_to_reference) {
    double ratio = report->ratio_to_reference.value_or(0.0);
    if (ratio < *min_ratio_to_reference) {
      std::ostringstream f;
      f << "tau ratio to reference " << ratio << " < min_ratio_to_reference " << *min_ratio_to_reference;
      failures.push_back(f.str());
    }
  }
  std::ostringstream msg;
  for (size_t i = 0; i < failures.size(); ++i) msg << (i ? "; " : "") << failures[i];
  // Passed with nothing asked is said as such: "PASSED" alone read as a verdict on tau.
  if (failures.empty()) msg << (min_tau || min_ratio_to_reference ? "all gates met" : "no gate set");
  report->gate_passed = failures.empty();
  report->gate_message = msg.str();
}

void defer_gate(const std::string& words, EvalReport* report) {
  report->gate_deferred = words;
  report->gate_passed = true;
  report->gate_message.clear();
}

}  // namespace ferry::eval
