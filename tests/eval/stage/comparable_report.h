// An eval report with what differs between two runs of the same eval taken out:
// timings (seconds, tokens/s, speedups, which depend on the machine's load), the
// paths it names (the same files reached from the coordinator or from a host), and
// the BLAS build line, whose core each process picks for itself (an
// OPENBLAS_CORETYPE in the coordinator's environment, which an ssh session on a
// host does not carry, names "Haswell" there and the CPU's own core on the host).
// What stays is every figure the drafters earn: τ, the histogram, the per-position
// acceptance, the per-prompt τ, forwards and tokens, the drafter diff, the gate. The
// CPU contention of a timed pass and its warning (jobs/eval/run/cpu_contention.h)
// depend on the load too. Tests only.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ferry::testing {

inline bool is_run_dependent_key(const std::string& k) {
  static const char* kKeys[] = {
      "target",  "drafter",           "reference",         "prompts",   "path",     "location",     "files_opened",
      "speedup", "reference_speedup", "tokens_per_second", "mean_tpot", "tpot_sum", "wall_seconds", "attempt",
      "blas",    "cpu_contention",    "response_tpots"};
  for (const char* x : kKeys) {
    if (k == x) return true;
  }
  if (k == "host") return true;  // where it ran: the coordinator, a host, or none (a merge of shards)
  auto ends_with = [&](const std::string& tail) {
    return k.size() >= tail.size() && k.compare(k.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends_with("_seconds") || ends_with("tokens_per_second") || ends_with("_speedup");
}

inline nlohmann::json comparable_report(const nlohmann::json& j) {
  if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto& [k, v] : j.items()) {
      if (!is_run_dependent_key(k)) out[k] = comparable_report(v);
    }
    if (out.contains("warnings") && out["warnings"].is_array()) {
      nlohmann::json kept = nlohmann::json::array();
      for (const auto& w : out["warnings"]) {
        if (!w.is_string() || w.get<std::string>().find("threads' time (") == std::string::npos) kept.push_back(w);
      }
      out["warnings"] = kept;
    }
    return out;
  }
  if (j.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& v : j) out.push_back(comparable_report(v));
    return out;
  }
  return j;
}

}  // namespace ferry::testing
