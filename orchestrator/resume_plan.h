// What `ferry resume` will do with each stage, and why, decided before anything
// runs: the run's workflow file is read again (a fix is picked up), and each
// stage's resolved definition (its inputs hash, stage_resolve.h) is compared with
// what its last attempt ran. A changed stage reruns with everything downstream of
// it; an unchanged success is kept; a running attempt is re-attached (restarted
// when it changed and the user asked). `--dry-run` prints the plan and stops.
// Plain functions over the store and two parsed workflows; the io-free part of
// the Scheduler resolves the definitions. One thread.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/scheduler.h"
#include "orchestrator/store.h"
#include "workflows/model.h"

namespace ferry {

enum class PlanAction { kKeep, kRun, kReattach, kRestart, kRemoved };
const char* plan_action_name(PlanAction action);

struct PlanStep {
  std::string stage;
  PlanAction action = PlanAction::kRun;
  std::string why;
};

struct ResumePlan {
  std::vector<PlanStep> steps;  // the workflow's stages in DAG order, then the removed ones
  bool workflow_changed = false;

  /// What the Scheduler is told: succeeded stages to run again, running ones to start afresh.
  std::set<std::string> rerun() const;
  std::set<std::string> restart() const;
};

/// Whether a stage recorded running is re-attached on resume, as its runner answers
/// (stage_reattaches: a job on a host, a copy), rather than closed as stopped with its
/// coordinator (an eval in a child of it).
bool reattachable(const StageRecord& rec, const workflow::Stage& stage);

/// The plan for resuming `run` (its record as stored, params those of `next`) with
/// `next`; `stored` is the workflow the run last ran with. `options` as the run's.
Result<ResumePlan> plan_resume(Store& store, const RunRecord& run, const workflow::Workflow& stored,
                               const workflow::Workflow& next, const SchedulerOptions& options, bool restart_changed);

/// A new run's plan (`ferry run --dry-run`): every stage runs.
ResumePlan plan_new_run(const workflow::Workflow& wf);

std::string render_plan(const ResumePlan& plan);
nlohmann::json plan_json(const ResumePlan& plan);

}  // namespace ferry
