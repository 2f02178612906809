#include "orchestrator/report/run_report.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>

#include "jobs/states.h"
#include "orchestrator/status_view.h"

namespace ferry::report {
namespace {

nlohmann::json attempt_json(const AttemptRecord& a) {
  return {{"attempt", a.attempt},
          {"state", state_name(a.state)},
          {"started_ms", a.started_ms},
          {"ended_ms", a.ended_ms},
          {"exit_code", a.exit_code ? nlohmann::json(*a.exit_code) : nlohmann::json()},
          {"error", a.error}};
}

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// One copy stage: what its last copy.started said (route, why, size) and what it measured.
nlohmann::json copy_json(const StageRecord& s, const std::vector<EventRecord>& events) {
  nlohmann::json c = {{"stage", s.name}, {"state", state_name(s.state)}, {"attempts", s.attempt}, {"route", ""}, {"reason", ""}};
  for (const auto& e : events) {
    if (e.type != "copy.started") continue;
    c["route"] = e.detail.value("route", std::string());
    c["reason"] = e.detail.value("reason", std::string());
    c["files"] = e.detail.value("files", 0);
  }
  auto metric = [&](const char* k) {
    auto it = s.metrics.find(k);
    return it == s.metrics.end() ? nlohmann::json() : nlohmann::json(it->second);
  };
  for (const char* k : {"bytes_total", "bytes_sent", "bytes_resent", "bytes_already_there", "seconds", "mib_per_s"}) {
    c[k] = metric(k);
  }
  return c;
}

// The copies a watching eval made, one per checkpoint: what its copy.started and
// copy.finished events (named after the checkpoint) say.
std::vector<nlohmann::json> checkpoint_copies(const StageRecord& s, const std::vector<EventRecord>& events) {
  std::vector<nlohmann::json> out;
  std::map<std::string, nlohmann::json> started;
  for (const auto& e : events) {
    const std::string checkpoint = e.detail.value("checkpoint", std::string());
    if (checkpoint.empty()) continue;
    if (e.type == "copy.started") started[checkpoint] = e.detail;
    if (e.type != "copy.finished") continue;
    const nlohmann::json& st = started[checkpoint];
    const double sent = number_or(e.detail, "bytes_sent", 0), secs = number_or(e.detail, "seconds", 0);
    out.push_back({{"stage", s.name + " · " + checkpoint},
                   {"state", e.detail.value("state", std::string())},
                   {"attempts", e.detail.value("attempt", 0)},
                   {"route", st.value("route", std::string())},
                   {"reason", st.value("reason", std::string())},
                   {"files", st.value("files", 0)},
                   {"bytes_total", number_or(st, "bytes", sent)},
                   {"bytes_sent", sent},
                   {"bytes_resent", number_or(e.detail, "bytes_resent", 0)},
                   {"bytes_already_there", nullptr},
                   {"seconds", secs},
                   {"mib_per_s", secs > 0 ? nlohmann::json(sent / secs / (1 << 20)) : nlohmann::json()}});
  }
  return out;
}

}  // namespace

std::optional<int64_t> checkpoint_step(const nlohmann::json& detail) {
  auto step = detail.find("step");
  if (step != detail.end() && step->is_number_integer()) return step->get<int64_t>();
  std::string path = detail.value("drafter", std::string());
  static const std::regex kStepInPath(R"((?:^|/)(?:checkpoint|step)[-_]([0-9]{1,15})(?:/|$))");
  std::smatch m;
  if (std::regex_search(path, m, kStepInPath)) return std::stoll(m[1].str());
  return std::nullopt;
}

Result<nlohmann::json> collect_run_report(Store& store, const std::string& run_ref) {
  auto run = store.find_run(run_ref);
  if (!run.ok()) return run.status();
  auto stages = store.stages(run->id);
  if (!stages.ok()) return stages.status();
  auto events = store.events(run->id);
  if (!events.ok()) return events.status();

  const int64_t generated_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
  nlohmann::json report = {
      {"format", kReportFormat}, {"generated_ms", generated_ms}, {"run", run_to_json(*run, *stages, store.path())}};
  report["run"]["workflow_source"] = run->workflow_source;
  nlohmann::json copies = nlohmann::json::array(), evals = nlohmann::json::array();
  nlohmann::json last_eval;
  std::string last_eval_stage;
  auto& stage_rows = report["run"]["stages"];
  for (size_t i = 0; i < stages->size(); ++i) {
    const StageRecord& s = (*stages)[i];
    std::vector<EventRecord> mine;
    for (const auto& e : *events) {
      if (e.stage == s.name) mine.push_back(e);
    }
    auto attempts = store.attempts(run->id, s.name);
    if (!attempts.ok()) return attempts.status();
    nlohmann::json att = nlohmann::json::array(), drops = nlohmann::json::array();
    for (const auto& a : *attempts) att.push_back(attempt_json(a));
    for (const auto& e : mine) {
      if (e.type == "host.disconnected") {
        drops.push_back({{"ts_ms", e.ts_ms}, {"host", e.detail.value("host", std::string())},
                         {"why", e.detail.value("why", std::string())}});
      } else if (e.type == "host.reconnected" && !drops.empty() && !drops.back().contains("reconnected_ms")) {
        drops.back()["reconnected_ms"] = e.ts_ms;
      }
    }
    stage_rows[i]["attempts"] = att;
    stage_rows[i]["drops"] = drops;
    nlohmann::json evaluated = nlohmann::json::array();  // when each eval's report came in (a watch has several)
    for (const auto& e : mine) {
      if (e.type == "eval.report") evaluated.push_back({{"ts_ms", e.ts_ms}, {"checkpoint", e.detail.value("checkpoint", std::string())}});
    }
    stage_rows[i]["evaluated"] = evaluated;
    if (s.kind == "copy") copies.push_back(copy_json(s, mine));
    for (auto& c : checkpoint_copies(s, mine)) copies.push_back(std::move(c));
    for (const auto& e : mine) {
      if (e.type != "eval.report" || !e.detail.is_object()) continue;
      const auto& d = e.detail;
      nlohmann::json point = {{"stage", s.name},
                              {"attempt", d.value("attempt", 0)},
                              {"ts_ms", e.ts_ms},
                              {"drafter", d.value("drafter", std::string())},
                              {"reference", d.value("reference", std::string())},
                              {"tau", number_or(d.value("candidate", nlohmann::json::object()), "tau", 0)},
                              {"gate_passed", d.value("gate_passed", true)}};
      auto step = checkpoint_step(d);
      point["step"] = step ? nlohmann::json(*step) : nlohmann::json();
      if (d.contains("reference_run") && d["reference_run"].is_object()) {
        point["reference_tau"] = number_or(d["reference_run"], "tau", 0);
      } else {
        point["reference_tau"] = nullptr;
      }
      point["speedup"] = number_or(d, "speedup", 0);
      point["ratio_to_reference"] = d.contains("ratio_to_reference") ? d["ratio_to_reference"] : nlohmann::json();
      if (d.contains("content_hash")) point["content_hash"] = d["content_hash"];
      evals.push_back(point);
      last_eval = d;
      last_eval_stage = s.name;
    }
  }
  // The curve reads left to right by step; evals without a step keep their order after.
  std::stable_sort(evals.begin(), evals.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    bool sa = a["step"].is_number(), sb = b["step"].is_number();
    if (sa != sb) return sa;
    return sa && a["step"].get<int64_t>() < b["step"].get<int64_t>();
  });
  report["copies"] = copies;
  report["evals"] = evals;
  report["eval"] = last_eval.is_null() ? nlohmann::json() : last_eval;
  report["eval_stage"] = last_eval_stage;
  nlohmann::json host_events = nlohmann::json::array();
  for (const auto& e : *events) {
    if (e.stage.empty() && e.type.rfind("host.", 0) == 0) {
      host_events.push_back({{"ts_ms", e.ts_ms}, {"type", e.type}, {"detail", e.detail}});
    }
  }
  report["host_events"] = host_events;
  return report;
}

}  // namespace ferry::report
