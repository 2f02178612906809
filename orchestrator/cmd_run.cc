// `ferry run`, `ferry resume`, `ferry cancel`, `ferry validate`.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "orchestrator/cli.h"
#include "orchestrator/eval_device_check.h"
#include "base/file_util.h"
#include "orchestrator/failure_tail.h"
#include "orchestrator/resume_plan.h"
#include "orchestrator/run_lock.h"
#include "orchestrator/scheduler.h"
#include "orchestrator/status_view.h"
#include "workflows/dag.h"
#include "workflows/param_overrides.h"
#include "workflows/parser.h"

namespace ferry::cli {
namespace {

// Drives the run to its end. With `json`, progress goes to stderr and stdout
// carries only the finished run as JSON (what `ferry status --json` prints).
// The caller holds the run's lock (`lock`) for as long as this process lives.
// Where a run's logs and hosts' default workdirs go, and where its progress is said.
SchedulerOptions scheduler_options(const Store& store, bool json) {
  SchedulerOptions opts;
  opts.logs_dir = logs_dir(store.path());
  opts.ferry_home = ferry_home(store.path());
  opts.out = json ? &std::cerr : &std::cout;
  opts.color = use_color(json ? 2 : 1);
  // How long a copy's idle data lanes stay open (idle_lanes.h); tests shorten it.
  if (const char* idle = std::getenv("FERRY_LANE_IDLE_S"); idle && std::atof(idle) > 0) {
    opts.lane_idle_close_s = std::atof(idle);
  }
  return opts;
}

int drive(Store& store, const FileLock& lock, workflow::Workflow wf, RunRecord run, bool json, SchedulerOptions opts) {
  (void)lock;
  std::ostream& progress = *opts.out;
  std::string id = run.id;
  progress << "run " << id << " (" << wf.path << ")\n" << std::flush;
  Scheduler scheduler(store, std::move(wf), std::move(run), opts);
  auto state = scheduler.run();
  if (scheduler.abandoned()) {
    // Connections to silent hosts may still be inside a connect or a handshake:
    // do not wait for them (the state is in the store, the jobs are detached).
    std::cout.flush();
    std::cerr.flush();
    std::_Exit(kExitCancelled);
  }
  if (!state.ok()) return fail(state.status());
  auto rec = store.find_run(id);
  auto stages = store.stages(id);
  if (rec.ok() && stages.ok()) {
    const std::string logs = logs_dir(store.path());
    if (json) std::cout << run_json_with_failures(store, *rec, *stages, logs).dump(2) << "\n";
    else std::cout << "\n" << render_status_with_failures(store, *rec, *stages, logs, use_color(1));
  }
  return exit_for_state(*state);
}

// What the store records of a stage before it runs.
StageSeed stage_seed(const workflow::Stage& st) {
  std::string host = st.kind == workflow::StageKind::kCopy ? st.from.host + "→" + st.to.host : st.host;
  return {st.name, workflow::stage_kind_name(st.kind), host};
}

}  // namespace

int cmd_run(const Common& c, const RunOptions& o) {
  const std::string& path = o.workflow;
  std::map<std::string, std::string> overrides;
  for (const std::string& kv : o.params) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "ferry run: -p wants NAME=VALUE, got '" << kv << "'\n";
      return kExitUsage;
    }
    overrides[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto wf = workflow::load_workflow(path);
  if (!wf.ok()) return fail(wf.status());
  Status s = workflow::apply_param_overrides(&*wf, overrides);
  if (!s.ok()) return fail(s);
  for (const auto& w : eval_device_warnings(*wf)) std::cerr << w << "\n";
  if (o.dry_run) {
    ResumePlan plan = plan_new_run(*wf);
    if (o.json) {
      std::cout << plan_json(plan).dump(2) << "\n";
    } else {
      std::cout << "ferry run " << path << " would run (nothing ran):\n" << render_plan(plan);
    }
    return kExitOk;
  }
  auto store = open_store(c);
  if (!store.ok()) return fail(store.status());
  nlohmann::json params = nlohmann::json::object();
  for (const auto& p : wf->params) params[p.name] = p.default_value;
  std::vector<StageSeed> seeds;
  for (const auto& st : wf->stages) seeds.push_back(stage_seed(st));
  // The lock is named by the uid, so it is taken before the run is committed and
  // no `resume last` can come in between.
  std::string uid = new_run_uid();
  auto lock = RunLock::take((*store)->path(), wf->name, uid);
  if (!lock.ok()) return fail(lock.status());
  auto run = (*store)->create_run(wf->name, path, wf->source, params, seeds, uid);
  if (!run.ok()) return fail(run.status());
  return drive(**store, *lock, std::move(*wf), std::move(*run), o.json, scheduler_options(**store, o.json));
}

// Rebuilds the workflow exactly as the run saw it: its saved text and params.
static Result<workflow::Workflow> workflow_of(const RunRecord& run) {
  auto wf = workflow::parse_workflow(run.workflow_path, run.workflow_source);
  if (!wf.ok()) return wf.status();
  std::map<std::string, std::string> overrides;
  for (auto& [k, v] : run.params.items()) {
    if (v.is_string()) overrides[k] = v.get<std::string>();
  }
  Status s = workflow::apply_param_overrides(&*wf, overrides);
  if (!s.ok()) return s;
  return wf;
}

// The run's -p values: those that differ from the defaults of the workflow it ran
// with, as its stored text says them (not `stored`, which has the run's params in).
static std::map<std::string, std::string> overrides_of(const RunRecord& run) {
  auto plain = workflow::parse_workflow(run.workflow_path, run.workflow_source);
  std::map<std::string, std::string> out;
  for (auto& [k, v] : run.params.items()) {
    if (!v.is_string()) continue;
    const auto* p = plain.ok() ? plain->find_param(k) : nullptr;
    if (!p || p->default_value != v.get<std::string>()) out[k] = v.get<std::string>();
  }
  return out;
}

// The workflow a resume runs with: the run's file read again (or `--workflow`),
// with the run's own -p values; `--stored`, or a file that is gone, keeps the text
// the run stored. `note` says which.
static Result<workflow::Workflow> workflow_to_resume(const RunRecord& run, const workflow::Workflow& stored,
                                                      const ResumeOptions& o, std::string* note) {
  const std::string path = o.workflow.empty() ? run.workflow_path : o.workflow;
  if (o.stored || (o.workflow.empty() && !path_exists(path))) {
    *note = o.stored ? "with the workflow as run " + run.id + " stored it (--stored)"
                     : "with the workflow as run " + run.id + " stored it: " + path +
                           " is not there (from this folder); --workflow FILE names it";
    return stored;
  }
  auto next = workflow::load_workflow(path);
  if (!next.ok()) {
    return Status(next.status().code(), next.status().message() + "\nferry resume: fix " + path +
                                            ", or `ferry resume " + run.id +
                                            " --stored` resumes with the workflow as the run stored it");
  }
  if (next->name != stored.name) {
    return invalid_argument(path + ": workflow '" + next->name + "', but run " + run.id + " is of workflow '" +
                            stored.name + "'");
  }
  const std::map<std::string, std::string> overrides = overrides_of(run);
  for (const auto& [k, v] : overrides) {
    if (!next->find_param(k)) {
      return invalid_argument(path + ": run " + run.id + " was started with -p " + k + "=" + v +
                              ", and the workflow has no param '" + k + "' any more (--stored resumes as it was)");
    }
  }
  FERRY_RETURN_IF_ERROR(workflow::apply_param_overrides(&*next, overrides));
  *note = next->source == stored.source && path == run.workflow_path
              ? "with " + path + " (unchanged since the run stored it)"
              : "with " + path + ", read again (it changed since the run stored it)";
  return next;
}

int cmd_resume(const Common& c, const ResumeOptions& o) {
  auto store = open_store(c);
  if (!store.ok()) return fail(store.status());
  auto found = (*store)->find_run(o.run);
  if (!found.ok()) return fail(found.status());
  // One coordinator per run: the lock, then the run as it stands under the lock.
  auto lock = RunLock::take((*store)->path(), found->id, found->uid);
  if (!lock.ok()) {
    std::cerr << "ferry: " << lock.status().message() << " (process " << found->coordinator_pid << ")\n";
    return kExitFailed;
  }
  auto run = (*store)->find_run(found->id);
  if (!run.ok()) return fail(run.status());
  auto stored = workflow_of(*run);
  if (!stored.ok()) return fail(stored.status());
  std::string note;
  auto wf = workflow_to_resume(*run, *stored, o, &note);
  if (!wf.ok()) return fail(wf.status());
  nlohmann::json params = nlohmann::json::object();
  for (const auto& p : wf->params) params[p.name] = p.default_value;
  RunRecord planned = *run;
  planned.params = params;
  SchedulerOptions opts = scheduler_options(**store, o.json);
  auto plan = plan_resume(**store, planned, *stored, *wf, opts, o.restart_changed);
  if (!plan.ok()) return fail(plan.status());
  const bool work = !plan->rerun().empty() || !plan->restart().empty();
  if (o.dry_run) {
    if (o.json) std::cout << plan_json(*plan).dump(2) << "\n";
    else std::cout << "ferry resume " << run->id << " " << note << " would (nothing ran):\n" << render_plan(*plan);
    return kExitOk;
  }
  if (run->state == RunState::kSucceeded && !work) {
    if (o.json) {
      auto stages = (*store)->stages(run->id);
      if (!stages.ok()) return fail(stages.status());
      std::cout << run_to_json(*run, *stages, (*store)->path()).dump(2) << "\n";
    } else {
      std::cout << "run " << run->id << " already succeeded; nothing to do\n";
    }
    return kExitOk;
  }
  *opts.out << "resume " << run->id << " " << note << ":\n" << render_plan(*plan) << std::flush;
  if (plan->workflow_changed) {
    std::vector<StageSeed> seeds;
    for (const auto& st : wf->stages) seeds.push_back(stage_seed(st));
    Status s = (*store)->update_workflow(run->id, wf->path, wf->source, params, seeds, plan_json(*plan));
    if (!s.ok()) return fail(s);
    run->workflow_path = wf->path;
    run->workflow_source = wf->source;
  }
  run->params = params;
  opts.rerun = plan->rerun();
  opts.restart = plan->restart();
  if (run->cancel_requested && !run_ended(run->state)) {
    // A cancel that never finished (a second Ctrl-C left hosts that did not
    // answer, or the coordinator died first): resuming means carry on, not
    // finish the cancel.
    Status s = (*store)->withdraw_cancel(run->id);
    if (!s.ok()) return fail(s);
    run->cancel_requested = false;
    std::cerr << "ferry: run " << run->id << " had a cancel request; resuming withdraws it (`ferry cancel " << run->id
              << "` stops the run)\n";
  }
  return drive(**store, *lock, std::move(*wf), std::move(*run), o.json, std::move(opts));
}

int cmd_cancel(const Common& c, const RunRef& o) {
  auto store = open_store(c);
  if (!store.ok()) return fail(store.status());
  auto run = (*store)->find_run(o.run);
  if (!run.ok()) return fail(run.status());
  if (run_ended(run->state)) {
    std::cout << "run " << run->id << " already ended (" << state_name(run->state) << ")\n";
    return kExitOk;
  }
  // A live coordinator holds the run's lock and reads the flag; else we drive the
  // cancel ourselves, under the lock, so no coordinator starts meanwhile.
  auto lock = RunLock::take((*store)->path(), run->id, run->uid);
  Status s = (*store)->request_cancel(run->id);
  if (!s.ok()) return fail(s);
  if (!lock.ok()) {
    std::cout << "asked the coordinator (pid " << run->coordinator_pid << ") to cancel run " << run->id << "\n";
    return kExitOk;
  }
  // Nobody drives the run: reach its hosts ourselves and stop what still runs.
  auto wf = workflow_of(*run);
  if (!wf.ok()) return fail(wf.status());
  SchedulerOptions opts = scheduler_options(**store, false);
  opts.cancel_now = true;
  int code = drive(**store, *lock, std::move(*wf), std::move(*run), false, std::move(opts));
  return code == kExitCancelled ? kExitOk : code;
}

int cmd_validate(const FileOptions& o) {
  std::ifstream in(o.workflow, std::ios::binary);
  if (!in) return fail(not_found(o.workflow + ": cannot open workflow file"));
  std::stringstream text;
  text << in.rdbuf();
  workflow::Diagnostics diagnostics(o.workflow);
  workflow::Workflow wf = workflow::parse_workflow_collecting(o.workflow, text.str(), &diagnostics);
  if (o.json) {
    nlohmann::json j = {{"file", o.workflow}, {"ok", diagnostics.empty()}};
    nlohmann::json errors = nlohmann::json::array();
    for (const auto& d : diagnostics.sorted()) {
      errors.push_back({{"line", d.at.line}, {"column", d.at.column}, {"message", d.message}});
    }
    j["errors"] = errors;
    j["warnings"] = eval_device_warnings(wf);
    if (diagnostics.empty()) {
      j["name"] = wf.name;
      j["hosts"] = wf.hosts.size();
      j["stages"] = workflow::topological_order(wf);
    }
    std::cout << j.dump(2) << "\n";
    return diagnostics.empty() ? kExitOk : kExitUsage;
  }
  if (!diagnostics.empty()) {
    std::cerr << diagnostics.to_string();
    return kExitUsage;
  }
  for (const auto& w : eval_device_warnings(wf)) std::cerr << w << "\n";
  std::cout << o.workflow << ": ok — workflow '" << wf.name << "', " << wf.hosts.size() << " hosts, "
            << wf.stages.size() << " stages\n";
  for (const auto& name : workflow::topological_order(wf)) {
    const auto* s = wf.find_stage(name);
    std::cout << "  " << name << " (" << workflow::stage_kind_name(s->kind)
              << (s->host.empty() ? "" : " on " + s->host) << ")";
    if (!s->needs.empty()) {
      std::cout << " needs";
      for (const auto& n : s->needs) std::cout << " " << n;
    }
    if (!s->watch.stage.empty()) std::cout << ", watches " << s->watch.stage << "'s checkpoints";
    if (!s->shards.empty()) std::cout << ", merges its " << s->shards.size() << " shards' reports";
    std::cout << "\n";
  }
  return kExitOk;
}

}  // namespace ferry::cli
