#include "orchestrator/report/run_report.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <regex>

#include "base/peer_json.h"
#include "jobs/eval/run/eval_report_json.h"
#include "jobs/states.h"
#include "orchestrator/report/dataset_table.h"
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

// One copy stage: what its last copy.started said (route, why, size) and what it measured.
nlohmann::json copy_json(const StageRecord& s, const std::vector<EventRecord>& events) {
  nlohmann::json c = {
      {"stage", s.name}, {"state", state_name(s.state)}, {"attempts", s.attempt}, {"route", ""}, {"reason", ""}};
  for (const auto& e : events) {
    if (e.type != "copy.started") continue;
    c["route"] = str_field(e.detail, "route");
    c["reason"] = str_field(e.detail, "reason");
    c["files"] = int_field(e.detail, "files");
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
    const std::string checkpoint = str_field(e.detail, "checkpoint");
    if (checkpoint.empty()) continue;
    if (e.type == "copy.started") started[checkpoint] = e.detail;
    if (e.type != "copy.finished") continue;
    const nlohmann::json& st = started[checkpoint];
    const double sent = num_field(e.detail, "bytes_sent", 0), secs = num_field(e.detail, "seconds", 0);
    out.push_back({{"stage", s.name + " · " + checkpoint},
                   {"state", str_field(e.detail, "state")},
                   {"attempts", int_field(e.detail, "attempt")},
                   {"route", str_field(st, "route")},
                   {"reason", str_field(st, "reason")},
                   {"files", int_field(st, "files")},
                   {"bytes_total", num_field(st, "bytes", sent)},
                   {"bytes_sent", sent},
                   {"bytes_resent", num_field(e.detail, "bytes_resent", 0)},
                   {"bytes_already_there", nullptr},
                   {"seconds", secs},
                   {"mib_per_s", secs > 0 ? nlohmann::json(sent / secs / (1 << 20)) : nlohmann::json()}});
  }
  return out;
}

// An eval's point on the curve from its stored report, read as the engine's type. A
// report a host wrote wrong is shown, not thrown: no τ, no verdict (failed), and why.
void eval_point(const nlohmann::json& stored, nlohmann::json* point) {
  Result<eval::EvalReport> read = eval::eval_report_from_json(stored);
  if (!read.ok()) {
    (*point)["unreadable"] = read.status().message();
    (*point)["gate_passed"] = false;
    (*point)["gate"] = "failed";
    (*point)["tau"] = (*point)["reference_tau"] = (*point)["ratio_to_reference"] = nullptr;
    (*point)["drafter"] = (*point)["reference"] = "";
    (*point)["speedup"] = nullptr;
    return;
  }
  const eval::EvalReport& r = *read;
  (*point)["drafter"] = r.drafter;
  (*point)["reference"] = r.reference;
  (*point)["tau"] = r.candidate.tau;
  // A watch's checkpoint has no verdict of its own: the stage judges its last one (eval.gate).
  (*point)["gate_passed"] = r.gate_deferred.empty() ? nlohmann::json(r.gate_passed) : nlohmann::json();
  (*point)["gate"] = !r.gate_deferred.empty() ? r.gate_deferred : r.gate_passed ? "passed" : "failed";
  (*point)["reference_tau"] = r.reference_run ? nlohmann::json(r.reference_run->tau) : nlohmann::json();
  (*point)["speedup"] = r.baseline ? nlohmann::json(r.speedup) : nlohmann::json();  // null: no baseline was run
  (*point)["ratio_to_reference"] = r.ratio_to_reference ? nlohmann::json(*r.ratio_to_reference) : nlohmann::json();
  if (!r.datasets.empty()) (*point)["datasets"] = dataset_points(r);  // τ per step per dataset
  // A watch's checkpoints share one baseline and reference run (baseline_store.h): null without a store.
  (*point)["baseline_reused"] = r.baseline_key.empty() ? nlohmann::json() : nlohmann::json(r.baseline_reused);
  (*point)["target_forwards_run"] = r.target_forwards_run;
}

}  // namespace

std::optional<int64_t> checkpoint_step(const nlohmann::json& detail) {
  auto step = detail.find("step");
  if (step != detail.end() && step->is_number_integer()) return step->get<int64_t>();
  std::string path = str_field(detail, "drafter");
  static const std::regex kStepInPath(R"((?:^|/)(?:checkpoint|step)[-_]([0-9]{1,15})(?:/|$))");
  std::smatch m;
  if (std::regex_search(path, m, kStepInPath)) return std::stoll(m[1].str());
  return std::nullopt;
}

namespace {

std::vector<EventRecord> events_of(const std::string& stage, const std::vector<EventRecord>& events) {
  std::vector<EventRecord> mine;
  for (const auto& e : events) {
    if (e.stage == stage) mine.push_back(e);
  }
  return mine;
}

// Each time a stage's host link dropped, and when it came back.
nlohmann::json link_drops(const std::vector<EventRecord>& mine) {
  nlohmann::json drops = nlohmann::json::array();
  for (const auto& e : mine) {
    if (e.type == "host.disconnected") {
      drops.push_back({{"ts_ms", e.ts_ms}, {"host", str_field(e.detail, "host")}, {"why", str_field(e.detail, "why")}});
    } else if (e.type == "host.reconnected" && !drops.empty() && !drops.back().contains("reconnected_ms")) {
      drops.back()["reconnected_ms"] = e.ts_ms;
    }
  }
  return drops;
}

// When each eval's report came in (a watch has several).
nlohmann::json eval_times(const std::vector<EventRecord>& mine) {
  nlohmann::json evaluated = nlohmann::json::array();
  for (const auto& e : mine) {
    if (e.type == "eval.report")
      evaluated.push_back({{"ts_ms", e.ts_ms}, {"checkpoint", str_field(e.detail, "checkpoint")}});
  }
  return evaluated;
}

// An eval still decoding: where it stands, and the candidate's τ so far; null for any other stage.
nlohmann::json running_eval_row(const StageRecord& s) {
  if (s.state != StageState::kRunning || !s.progress.is_object() || !s.progress.contains("prompts_total")) return {};
  const auto& p = s.progress;
  nlohmann::json row = {{"stage", s.name},
                        {"phase", str_field(p, "phase")},
                        {"prompts_done", int_field(p, "prompts_done")},
                        {"prompts_total", int_field(p, "prompts_total")},
                        {"run", int_field(p, "run")},
                        {"runs", int_field(p, "runs")},
                        {"tokens_per_s", num_field(p, "tokens_per_s", 0)}};
  row["tau_so_far"] = p.contains("tau") && p["tau"].is_number() ? p["tau"] : nlohmann::json();
  row["eta_s"] = p.contains("eta_s") && p["eta_s"].is_number() ? p["eta_s"] : nlohmann::json();
  return row;
}

// The run's evals as points on the τ curve, and its newest whole eval with the
// verdict of the stage that made it.
struct EvalCurve {
  nlohmann::json points = nlohmann::json::array();
  nlohmann::json last;     // the newest eval.report's detail
  std::string last_stage;  // the stage that reported it

  void add_stage(const StageRecord& s, const std::vector<EventRecord>& mine) {
    for (const auto& e : mine) {
      if (e.type == "eval.gate" && last_stage == s.name && last.is_object()) {
        // The stage's verdict on its newest eval (a watch judges its last checkpoint).
        last.erase("gate_deferred");
        last["gate_passed"] = bool_field(e.detail, "gate_passed");
        last["gate_message"] = str_field(e.detail, "gate_message");
        continue;
      }
      // A shard's report is a part of an eval, not one: its merge stage has the whole.
      if (e.type != "eval.report" || !e.detail.is_object() || e.detail.contains("shard")) continue;
      const auto& d = e.detail;
      // Outside the engine's type: what the stage added (attempt, checkpoint, content hash).
      nlohmann::json point = {{"stage", s.name}, {"attempt", int_field(d, "attempt")}, {"ts_ms", e.ts_ms}};
      auto step = checkpoint_step(d);
      point["step"] = step ? nlohmann::json(*step) : nlohmann::json();
      if (d.contains("content_hash")) point["content_hash"] = d["content_hash"];
      eval_point(d, &point);
      points.push_back(point);
      last = d;
      last_stage = s.name;
    }
  }

  // The curve reads left to right by step; evals without a step keep their order after.
  void sort_by_step() {
    std::stable_sort(points.begin(), points.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
      bool sa = a["step"].is_number(), sb = b["step"].is_number();
      if (sa != sb) return sa;
      return sa && a["step"].get<int64_t>() < b["step"].get<int64_t>();
    });
  }
};

// Events of the run's host links, outside any stage.
nlohmann::json host_events_json(const std::vector<EventRecord>& events) {
  nlohmann::json host_events = nlohmann::json::array();
  for (const auto& e : events) {
    if (e.stage.empty() && e.type.rfind("host.", 0) == 0) {
      host_events.push_back({{"ts_ms", e.ts_ms}, {"type", e.type}, {"detail", e.detail}});
    }
  }
  return host_events;
}

}  // namespace

Result<nlohmann::json> collect_run_report(Store& store, const std::string& run_ref) {
  auto run = store.find_run(run_ref);
  if (!run.ok()) return run.status();
  auto stages = store.stages(run->id);
  if (!stages.ok()) return stages.status();
  auto events = store.events(run->id);
  if (!events.ok()) return events.status();

  const int64_t generated_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  nlohmann::json report = {
      {"format", kReportFormat}, {"generated_ms", generated_ms}, {"run", run_to_json(*run, *stages, store.path())}};
  report["run"]["workflow_source"] = run->workflow_source;
  nlohmann::json copies = nlohmann::json::array();
  nlohmann::json running_evals = nlohmann::json::array();  // evals still decoding: their τ so far
  EvalCurve evals;
  auto& stage_rows = report["run"]["stages"];
  for (size_t i = 0; i < stages->size(); ++i) {
    const StageRecord& s = (*stages)[i];
    const std::vector<EventRecord> mine = events_of(s.name, *events);
    auto attempts = store.attempts(run->id, s.name);
    if (!attempts.ok()) return attempts.status();
    nlohmann::json att = nlohmann::json::array();
    for (const auto& a : *attempts) att.push_back(attempt_json(a));
    stage_rows[i]["attempts"] = att;
    stage_rows[i]["drops"] = link_drops(mine);
    stage_rows[i]["evaluated"] = eval_times(mine);
    if (nlohmann::json row = running_eval_row(s); !row.is_null()) running_evals.push_back(row);
    if (s.kind == "copy") copies.push_back(copy_json(s, mine));
    for (auto& c : checkpoint_copies(s, mine)) copies.push_back(std::move(c));
    evals.add_stage(s, mine);
  }
  evals.sort_by_step();
  report["copies"] = copies;
  report["evals"] = evals.points;
  report["running_evals"] = running_evals;
  report["eval"] = evals.last.is_null() ? nlohmann::json() : evals.last;
  report["eval_stage"] = evals.last_stage;
  report["host_events"] = host_events_json(*events);
  return report;
}

}  // namespace ferry::report
