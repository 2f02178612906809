// `ferry status`, `ferry runs`, `ferry logs`: read-only views of the store.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <thread>

#include "base/capped_log.h"
#include "base/file_util.h"
#include "base/terminal_text.h"
#include "orchestrator/cli.h"
#include "orchestrator/failure_tail.h"
#include "orchestrator/scheduler.h"
#include "orchestrator/status_view.h"
#include "workflows/diagnostics.h"

namespace ferry::cli {

namespace {

// " (did you mean 'eval'?)", else the run's stages: the name was mistyped or guessed.
std::string stage_hint(const std::string& name, const std::vector<std::string>& stages) {
  const std::string near = workflow::did_you_mean_hint(name, stages);
  if (!near.empty()) return near;
  std::string all;
  for (const auto& s : stages) all += (all.empty() ? "" : ", ") + s;
  return all.empty() ? " (it has no stages yet)" : " (its stages: " + all + ")";
}

// `status --watch`: the table again whenever it changes, until the run ends or its
// coordinator is gone. On a terminal each table replaces the last one.
int watch_status(Store& store, const StatusOptions& o) {
  const bool tty = use_color(1);
  const auto interval = std::chrono::milliseconds(static_cast<int64_t>(o.interval_s * 1000));
  std::string shown;
  for (;;) {
    auto run = store.find_run(o.run);
    if (!run.ok()) return fail(run.status());
    auto stages = store.stages(run->id);
    if (!stages.ok()) return fail(stages.status());
    std::string table = render_status(*run, *stages, store.path(), tty);
    if (table != shown) {
      if (tty) std::cout << "\033[H\033[2J";  // home, clear screen
      else if (!shown.empty()) std::cout << "\n";
      std::cout << table << std::flush;
      shown = table;
    }
    bool live = !run_ended(run->state);
    if (!live) return exit_for_state(run->state);
    if (run->state == RunState::kRunning && !coordinator_alive(*run, store.path())) {
      std::cerr << "ferry: the coordinator of run " << run->id << " is gone; `ferry resume " << run->id
                << "` finishes it\n";
      return kExitFailed;
    }
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace

int cmd_status(const Common& c, const StatusOptions& o) {
  auto store = open_store_read_only(c);
  if (!store.ok()) return fail(store.status());
  if (o.watch) return watch_status(**store, o);
  auto run = (*store)->find_run(o.run);
  if (!run.ok()) return fail(run.status());
  auto stages = (*store)->stages(run->id);
  if (!stages.ok()) return fail(stages.status());
  const std::string logs = logs_dir((*store)->path());
  if (o.json) std::cout << run_json_with_failures(**store, *run, *stages, logs).dump(2) << "\n";
  else std::cout << render_status_with_failures(**store, *run, *stages, logs, use_color(1));
  return kExitOk;
}

int cmd_runs(const Common& c, bool json) {
  if (!path_exists(c.db)) {  // no database yet: no runs, not an error
    std::cout << (json ? "[]\n" : "no runs yet (state database " + c.db + ")\n");
    return kExitOk;
  }
  auto store = open_store_read_only(c);
  if (!store.ok()) return fail(store.status());
  auto runs = (*store)->list_runs(1000);
  if (!runs.ok()) return fail(runs.status());
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : *runs) {
      arr.push_back({{"id", r.id}, {"name", r.name}, {"state", state_name(r.state)}, {"workflow", r.workflow_path},
                     {"created_ms", r.created_ms}, {"ended_ms", r.ended_ms}});
    }
    std::cout << arr.dump(2) << "\n";
  } else {
    std::cout << render_runs(*runs, (*store)->path(), use_color(1));
  }
  return kExitOk;
}

// `ferry logs` prints a log this much at a time.
constexpr int64_t kLogsReadBytes = 1 << 20;

int cmd_logs(const Common& c, const LogsOptions& o) {
  const bool follow = o.follow;
  const int attempt = o.attempt;
  const std::vector<std::string> pos = {o.run, o.stage};
  auto store = open_store_read_only(c);
  if (!store.ok()) return fail(store.status());
  auto run = (*store)->find_run(pos[0]);
  if (!run.ok()) return fail(run.status());
  auto stage_state = [&]() -> Result<StageRecord> {
    auto stages = (*store)->stages(run->id);
    if (!stages.ok()) return stages.status();
    std::vector<std::string> names;
    for (const auto& s : *stages) {
      if (s.name == pos[1]) return s;
      names.push_back(s.name);
    }
    return not_found("run " + run->id + " has no stage '" + pos[1] + "'" + stage_hint(pos[1], names));
  };
  auto st = stage_state();
  if (!st.ok()) return fail(st.status());
  int which = attempt > 0 ? attempt : st->attempt;
  if (which == 0) {
    std::cerr << "ferry: stage '" << pos[1] << "' has not started\n";
    if (!follow) return kExitOk;
  }
  const bool tty = ::isatty(1) != 0;
  auto path_of = [&](int attempt_no) { return Scheduler::log_path(logs_dir(c.db), run->id, pos[1], attempt_no); };
  // A job's bytes as they are into a pipe or file; on a terminal, shown, not obeyed.
  auto show = [&](const std::string& bytes) { std::cout << (tty ? escape_controls(bytes) : bytes) << std::flush; };
  int64_t offset = 0;
  // Prints what came since `offset` a piece at a time, never the whole log at once,
  // with a marker where the log dropped bytes (over its log_max, capped_log.h).
  auto print_new = [&]() -> Status {
    for (;;) {
      auto r = read_capped_log(path_of(which), offset, kLogsReadBytes);
      if (!r.ok()) return r.status();
      if (r->dropped > 0) show(dropped_marker(r->dropped));
      show(r->bytes);
      offset = r->offset + static_cast<int64_t>(r->bytes.size());
      if (r->bytes.empty()) return Status();
    }
  };
  if (which > 0 && o.tail > 0) {
    auto last = capped_log_tail(path_of(which), o.tail, &offset);
    if (!last.ok()) return fail(last.status());
    show(*last);
  }
  for (;;) {
    if (which > 0) {
      Status s = print_new();
      if (!s.ok()) return fail(s);
    }
    if (!follow) break;
    auto now = stage_state();
    if (!now.ok()) return fail(now.status());
    if (attempt == 0 && now->attempt != which) {  // a retry started: follow it
      which = now->attempt;
      offset = 0;
      continue;
    }
    bool ended = !stage_active(now->state);
    auto r = (*store)->find_run(run->id);
    if (ended || (r.ok() && run_ended(r->state))) {
      // One last read so nothing written just before the end is missed.
      Status s = print_new();
      if (!s.ok()) return fail(s);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return kExitOk;
}

}  // namespace ferry::cli
