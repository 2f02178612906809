// `ferry status`, `ferry runs`, `ferry logs`: read-only views of the store.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "agents/file_util.h"
#include "orchestrator/cli.h"
#include "orchestrator/scheduler.h"
#include "orchestrator/status_view.h"

namespace ferry::cli {

int cmd_status(const Common& c) {
  if (c.help || c.args.size() > 2) {
    std::cout << "usage: ferry status [RUN] [--json] [--db PATH]\n"
                 "One row per stage: state, host, attempt, start, duration, exit code or error.\n";
    return c.help ? kExitOk : kExitUsage;
  }
  auto store = open_store_read_only(c);
  if (!store.ok()) return fail(store.status());
  auto run = (*store)->find_run(c.args.size() == 2 ? c.args[1] : "last");
  if (!run.ok()) return fail(run.status());
  auto stages = (*store)->stages(run->id);
  if (!stages.ok()) return fail(stages.status());
  if (c.json) std::cout << run_to_json(*run, *stages).dump(2) << "\n";
  else std::cout << render_status(*run, *stages, use_color(1));
  return kExitOk;
}

int cmd_runs(const Common& c) {
  if (c.help) {
    std::cout << "usage: ferry runs [--json] [--db PATH]\nEvery run, newest first.\n";
    return kExitOk;
  }
  if (!path_exists(c.db)) {  // no database yet: no runs, not an error
    std::cout << (c.json ? "[]\n" : "no runs yet (state database " + c.db + ")\n");
    return kExitOk;
  }
  auto store = open_store_read_only(c);
  if (!store.ok()) return fail(store.status());
  auto runs = (*store)->list_runs(1000);
  if (!runs.ok()) return fail(runs.status());
  if (c.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : *runs) {
      arr.push_back({{"id", r.id}, {"name", r.name}, {"state", r.state}, {"workflow", r.workflow_path},
                     {"created_ms", r.created_ms}, {"ended_ms", r.ended_ms}});
    }
    std::cout << arr.dump(2) << "\n";
  } else {
    std::cout << render_runs(*runs, use_color(1));
  }
  return kExitOk;
}

int cmd_logs(const Common& c) {
  bool follow = false;
  int attempt = 0;
  std::vector<std::string> pos;
  for (size_t i = 1; i < c.args.size(); ++i) {
    if (c.args[i] == "-f" || c.args[i] == "--follow") follow = true;
    else if (c.args[i] == "--attempt" && i + 1 < c.args.size()) attempt = std::atoi(c.args[++i].c_str());
    else pos.push_back(c.args[i]);
  }
  if (c.help || pos.size() != 2) {
    std::cout << "usage: ferry logs RUN STAGE [-f] [--attempt N] [--db PATH]\n"
                 "Prints a stage's output (stdout and stderr); -f follows it until the stage ends.\n";
    return c.help ? kExitOk : kExitUsage;
  }
  auto store = open_store_read_only(c);
  if (!store.ok()) return fail(store.status());
  auto run = (*store)->find_run(pos[0]);
  if (!run.ok()) return fail(run.status());
  auto stage_state = [&]() -> Result<StageRecord> {
    auto stages = (*store)->stages(run->id);
    if (!stages.ok()) return stages.status();
    for (const auto& s : *stages) {
      if (s.name == pos[1]) return s;
    }
    return not_found("run " + run->id + " has no stage '" + pos[1] + "'");
  };
  auto st = stage_state();
  if (!st.ok()) return fail(st.status());
  int which = attempt > 0 ? attempt : st->attempt;
  if (which == 0) {
    std::cerr << "ferry: stage '" << pos[1] << "' has not started\n";
    if (!follow) return kExitOk;
  }
  int64_t offset = 0;
  for (;;) {
    if (which > 0) {
      std::string path = Scheduler::log_path(logs_dir(c.db), run->id, pos[1], which);
      std::ifstream in(path, std::ios::binary);
      if (in) {
        in.seekg(offset);
        std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::cout << chunk << std::flush;
        offset += static_cast<int64_t>(chunk.size());
      }
    }
    if (!follow) break;
    auto now = stage_state();
    if (!now.ok()) return fail(now.status());
    if (attempt == 0 && now->attempt != which) {  // a retry started: follow it
      which = now->attempt;
      offset = 0;
      continue;
    }
    bool ended = now->state != "running" && now->state != "pending" && now->state != "retrying";
    auto r = (*store)->find_run(run->id);
    if (ended || (r.ok() && r->state != "running" && r->state != "pending")) {
      // One last read so nothing written just before the end is missed.
      std::string path = Scheduler::log_path(logs_dir(c.db), run->id, pos[1], which);
      std::ifstream in(path, std::ios::binary);
      if (in) {
        in.seekg(offset);
        std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::cout << chunk << std::flush;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return kExitOk;
}

}  // namespace ferry::cli
