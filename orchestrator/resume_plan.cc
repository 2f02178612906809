#include "orchestrator/resume_plan.h"

#include <map>

#include "jobs/stage_factory.h"
#include "workflows/dag.h"

namespace ferry {
namespace {

// The parts of a stage's definition that differ: top-level keys, and inside env
// and upstream the names ("command", "env.LR", "upstream.make").
std::string changed_fields(const nlohmann::json& before, const nlohmann::json& after) {
  std::vector<std::string> fields;
  auto keys = [](const nlohmann::json& j) {
    std::set<std::string> k;
    if (j.is_object())
      for (auto& [name, v] : j.items()) k.insert(name);
    return k;
  };
  std::set<std::string> all = keys(before);
  for (const auto& k : keys(after)) all.insert(k);
  for (const auto& k : all) {
    const nlohmann::json b = before.is_object() && before.contains(k) ? before[k] : nlohmann::json();
    const nlohmann::json a = after.is_object() && after.contains(k) ? after[k] : nlohmann::json();
    if (a == b) continue;
    if ((k == "env" || k == "upstream") && a.is_object() && b.is_object()) {
      std::set<std::string> sub = keys(a);
      for (const auto& s : keys(b)) sub.insert(s);
      for (const auto& s : sub) {
        if (a.value(s, nlohmann::json()) != b.value(s, nlohmann::json())) fields.push_back(k + "." + s);
      }
      continue;
    }
    fields.push_back(k);
  }
  std::string out;
  for (const auto& f : fields) out += (out.empty() ? "" : ", ") + f;
  return out;
}

std::string ended_why(const StageRecord& rec) {
  switch (rec.state) {
    case StageState::kFailed: return "attempt " + std::to_string(rec.attempt) + " failed";
    case StageState::kTimedOut: return "attempt " + std::to_string(rec.attempt) + " timed out";
    case StageState::kCancelled: return "it was cancelled";
    case StageState::kSkipped: return "it was skipped";
    case StageState::kRunning: return "attempt " + std::to_string(rec.attempt) + " stopped with its coordinator";
    default: return rec.attempt > 0 ? "it did not finish" : "it never ran";
  }
}

}  // namespace

const char* plan_action_name(PlanAction action) {
  switch (action) {
    case PlanAction::kKeep: return "keep";
    case PlanAction::kRun: return "run";
    case PlanAction::kReattach: return "re-attach";
    case PlanAction::kRestart: return "restart";
    case PlanAction::kRemoved: return "removed";
  }
  return "?";
}

std::set<std::string> ResumePlan::rerun() const {
  std::set<std::string> out;
  for (const auto& s : steps)
    if (s.action == PlanAction::kRun) out.insert(s.stage);
  return out;
}

std::set<std::string> ResumePlan::restart() const {
  std::set<std::string> out;
  for (const auto& s : steps)
    if (s.action == PlanAction::kRestart) out.insert(s.stage);
  return out;
}

bool reattachable(const StageRecord& rec, const workflow::Stage& stage) {
  return rec.state == StageState::kRunning && rec.attempt > 0 && stage_reattaches(stage);
}

Result<ResumePlan> plan_resume(Store& store, const RunRecord& run, const workflow::Workflow& stored,
                               const workflow::Workflow& next, const SchedulerOptions& options, bool restart_changed) {
  auto records = store.stages(run.id);
  if (!records.ok()) return records.status();
  std::map<std::string, StageRecord> by_name;
  for (const auto& r : *records) by_name[r.name] = r;
  SchedulerOptions quiet = options;
  quiet.out = nullptr;
  // Each workflow's definitions, resolved against the outputs the store holds.
  auto resolved = [&](const workflow::Workflow& wf) {
    Scheduler s(store, wf, run, quiet);
    return s.planned_inputs();
  };
  auto before = resolved(stored);
  if (!before.ok()) return before.status();
  auto after = resolved(next);
  if (!after.ok()) return after.status();

  ResumePlan plan;
  plan.workflow_changed = stored.source != next.source || stored.path != next.path;
  std::set<std::string> reruns;  // stages whose work is done again (their downstream follows)
  for (const std::string& name : workflow::topological_order(next)) {
    const workflow::Stage* stage = next.find_stage(name);
    PlanStep step{name, PlanAction::kRun, ""};
    auto rec = by_name.find(name);
    std::string upstream;
    for (const auto& need : stage->needs)
      if (reruns.count(need) && upstream.empty()) upstream = need;
    const StageInputs& now = (*after)[name];
    const StageInputs& was = (*before).count(name) ? (*before)[name] : StageInputs{};
    bool changed = false;
    std::string what;
    if (rec != by_name.end()) {
      changed = now.error.empty() ? now.hash != rec->second.inputs_hash : !upstream.empty();
      if (changed && now.error.empty() && was.error.empty()) what = changed_fields(was.inputs, now.inputs);
    }
    if (rec == by_name.end()) {
      step.why = "new in the workflow";
    } else if (rec->second.state == StageState::kSucceeded) {
      if (!upstream.empty()) {
        step.why = "upstream '" + upstream + "' runs again";
      } else if (!now.error.empty()) {
        step.why = "its definition cannot be resolved yet: " + now.error;
      } else if (changed) {
        step.why = "its definition changed" + (what.empty() ? std::string() : ": " + what);
      } else {
        step.action = PlanAction::kKeep;
        step.why = "succeeded, unchanged";
      }
    } else if (reattachable(rec->second, *stage)) {
      step.action = PlanAction::kReattach;
      step.why = "attempt " + std::to_string(rec->second.attempt) + " is running";
      if (changed) {
        std::string change = "its definition changed" + (what.empty() ? std::string() : " (" + what + ")");
        if (restart_changed) {
          step.action = PlanAction::kRestart;
          step.why = change + " while attempt " + std::to_string(rec->second.attempt) +
                     " ran: stopped and started again (--restart-changed)";
        } else {
          step.why += "; " + change + ": kept as it runs (--restart-changed restarts it)";
        }
      }
    } else {
      step.why = ended_why(rec->second);
      if (changed && !what.empty()) step.why += "; changed: " + what;
    }
    if (step.action == PlanAction::kRun || step.action == PlanAction::kRestart) reruns.insert(name);
    plan.steps.push_back(step);
  }
  for (const auto& r : *records) {
    if (next.find_stage(r.name)) continue;
    plan.steps.push_back({r.name, PlanAction::kRemoved, "no longer in the workflow; its record stays"});
  }
  return plan;
}

ResumePlan plan_new_run(const workflow::Workflow& wf) {
  ResumePlan plan;
  for (const std::string& name : workflow::topological_order(wf))
    plan.steps.push_back({name, PlanAction::kRun, "new run"});
  return plan;
}

std::string render_plan(const ResumePlan& plan) {
  size_t width = 0;
  for (const auto& s : plan.steps) width = std::max(width, s.stage.size());
  std::string out;
  for (const auto& s : plan.steps) {
    std::string action = plan_action_name(s.action);
    out += "  " + action + std::string(10 - action.size(), ' ') + s.stage +
           std::string(width - s.stage.size() + 2, ' ') + s.why + "\n";
  }
  return out;
}

nlohmann::json plan_json(const ResumePlan& plan) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& s : plan.steps)
    arr.push_back({{"stage", s.stage}, {"action", plan_action_name(s.action)}, {"why", s.why}});
  return {{"workflow_changed", plan.workflow_changed}, {"stages", arr}};
}

}  // namespace ferry
