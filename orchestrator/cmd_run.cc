// `ferry run`, `ferry resume`, `ferry cancel`, `ferry validate`.
#include <iostream>

#include "orchestrator/cli.h"
#include "orchestrator/scheduler.h"
#include "orchestrator/status_view.h"
#include "workflows/dag.h"
#include "workflows/parser.h"

namespace ferry::cli {
namespace {

int exit_for_state(const std::string& state) {
  if (state == "succeeded") return kExitOk;
  if (state == "cancelled") return kExitCancelled;
  return kExitFailed;
}

int drive(Store& store, workflow::Workflow wf, RunRecord run, const Common& c, bool cancel_now) {
  SchedulerOptions opts;
  opts.logs_dir = logs_dir(store.path());
  opts.ferry_home = ferry_home(store.path());
  opts.out = &std::cout;
  opts.color = use_color(1);
  opts.cancel_now = cancel_now;
  std::string id = run.id;
  std::cout << "run " << id << " (" << wf.path << ")\n" << std::flush;
  Scheduler scheduler(store, std::move(wf), std::move(run), opts);
  auto state = scheduler.run();
  if (!state.ok()) return fail(state.status());
  auto rec = store.find_run(id);
  auto stages = store.stages(id);
  if (rec.ok() && stages.ok()) std::cout << "\n" << render_status(*rec, *stages, use_color(1));
  return exit_for_state(*state);
}

const char* kRunHelp =
    "usage: ferry run WORKFLOW.yaml [-p NAME=VALUE]... [--db PATH]\n"
    "Runs every stage of the workflow; prints progress and the final status table.\n"
    "Ctrl-C once cancels gracefully, twice kills running jobs.\n";

}  // namespace

int cmd_run(const Common& c) {
  if (c.help || c.args.size() < 2) {
    std::cout << kRunHelp;
    return c.help ? kExitOk : kExitUsage;
  }
  std::string path = c.args[1];
  std::map<std::string, std::string> overrides;
  for (size_t i = 2; i < c.args.size(); ++i) {
    std::string a = c.args[i];
    std::string kv;
    if (a == "-p" && i + 1 < c.args.size()) kv = c.args[++i];
    else if (a.rfind("-p", 0) == 0 && a.size() > 2) kv = a.substr(2);
    else {
      std::cerr << "ferry run: unexpected argument '" << a << "'\n" << kRunHelp;
      return kExitUsage;
    }
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
  auto store = open_store(c);
  if (!store.ok()) return fail(store.status());
  nlohmann::json params = nlohmann::json::object();
  for (const auto& p : wf->params) params[p.name] = p.default_value;
  std::vector<StageSeed> seeds;
  for (const auto& st : wf->stages) {
    std::string host = st.kind == workflow::StageKind::kCopy ? st.from.host + "→" + st.to.host : st.host;
    seeds.push_back({st.name, workflow::stage_kind_name(st.kind), host});
  }
  auto run = (*store)->create_run(wf->name, path, wf->source, params, seeds);
  if (!run.ok()) return fail(run.status());
  return drive(**store, std::move(*wf), std::move(*run), c, false);
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

int cmd_resume(const Common& c) {
  if (c.help || c.args.size() != 2) {
    std::cout << "usage: ferry resume RUN [--db PATH]\n"
                 "Finishes RUN: stages that succeeded with the same inputs are kept, running ones are\n"
                 "re-attached (never restarted), failed or never-run ones run again.\n";
    return c.help ? kExitOk : kExitUsage;
  }
  auto store = open_store(c);
  if (!store.ok()) return fail(store.status());
  auto run = (*store)->find_run(c.args[1]);
  if (!run.ok()) return fail(run.status());
  if (run->state == "running" && coordinator_alive(*run)) {
    std::cerr << "ferry: run " << run->id << " is being driven by process " << run->coordinator_pid << "\n";
    return kExitFailed;
  }
  if (run->state == "succeeded") {
    std::cout << "run " << run->id << " already succeeded; nothing to do\n";
    return kExitOk;
  }
  auto wf = workflow_of(*run);
  if (!wf.ok()) return fail(wf.status());
  return drive(**store, std::move(*wf), std::move(*run), c, false);
}

int cmd_cancel(const Common& c) {
  if (c.help || c.args.size() != 2) {
    std::cout << "usage: ferry cancel RUN [--db PATH]\nStops RUN: running jobs get SIGTERM, nothing new starts.\n";
    return c.help ? kExitOk : kExitUsage;
  }
  auto store = open_store(c);
  if (!store.ok()) return fail(store.status());
  auto run = (*store)->find_run(c.args[1]);
  if (!run.ok()) return fail(run.status());
  if (run->state == "succeeded" || run->state == "failed" || run->state == "cancelled") {
    std::cout << "run " << run->id << " already ended (" << run->state << ")\n";
    return kExitOk;
  }
  Status s = (*store)->request_cancel(run->id);
  if (!s.ok()) return fail(s);
  if (run->state == "running" && coordinator_alive(*run)) {
    std::cout << "asked the coordinator (pid " << run->coordinator_pid << ") to cancel run " << run->id << "\n";
    return kExitOk;
  }
  // Nobody drives the run: reach its hosts ourselves and stop what still runs.
  auto wf = workflow_of(*run);
  if (!wf.ok()) return fail(wf.status());
  int code = drive(**store, std::move(*wf), std::move(*run), c, true);
  return code == kExitCancelled ? kExitOk : code;
}

int cmd_validate(const Common& c) {
  if (c.help || c.args.size() != 2) {
    std::cout << "usage: ferry validate WORKFLOW.yaml\nLists every problem as file:line:col: message.\n";
    return c.help ? kExitOk : kExitUsage;
  }
  auto wf = workflow::load_workflow(c.args[1]);
  if (!wf.ok()) {
    std::cerr << wf.status().message() << "\n";
    return wf.status().code() == StatusCode::kNotFound ? kExitNotFound : kExitUsage;
  }
  std::cout << c.args[1] << ": ok — workflow '" << wf->name << "', " << wf->hosts.size() << " hosts, "
            << wf->stages.size() << " stages\n";
  for (const auto& name : workflow::topological_order(*wf)) {
    const auto* s = wf->find_stage(name);
    std::cout << "  " << name << " (" << workflow::stage_kind_name(s->kind)
              << (s->host.empty() ? "" : " on " + s->host) << ")";
    if (!s->needs.empty()) {
      std::cout << " needs";
      for (const auto& n : s->needs) std::cout << " " << n;
    }
    std::cout << "\n";
  }
  return kExitOk;
}

}  // namespace ferry::cli
