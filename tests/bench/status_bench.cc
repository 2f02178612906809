// Benchmark: `ferry status` on a run with 1,000 stages (goal ≤ 50 ms).
//
// Seeds a real state database through the Store (each stage with an attempt,
// events, outputs and a metric, as a finished run would leave it), then times
// the real `ferry status RUN` and `ferry status RUN --json` processes, and the
// trivial `ferry --help` beside them as the floor of process start-up.
// Prints medians; not a test.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "orchestrator/store.h"
#include "tests/support/process.h"

using namespace ferry;

static double median_ms(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env, int n) {
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    auto start = std::chrono::steady_clock::now();
    auto r = testing::run_process(argv, env);
    auto end = std::chrono::steady_clock::now();
    if (r.exit_code != 0) {
      std::fprintf(stderr, "command failed: %s\n", r.err.c_str());
      return -1;
    }
    t.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  int stages = argc > 1 ? std::atoi(argv[1]) : 1000;
  int repeats = argc > 2 ? std::atoi(argv[2]) : 21;
  testing::TempDir home;
  auto store = Store::open(home.file("ferry.db"));
  if (!store.ok()) return 1;
  std::vector<StageSeed> seeds;
  for (int i = 0; i < stages; ++i)
    seeds.push_back({"stage-" + std::to_string(i), "command", "host-" + std::to_string(i % 16)});
  auto run = (*store)->create_run("big", "big.yaml", "name: big", nlohmann::json::object(), seeds);
  if (!run.ok()) return 1;
  for (int i = 0; i < stages; ++i) {
    std::string s = "stage-" + std::to_string(i);
    (void)(*store)->begin_attempt(run->id, s, 1, "tok", "hash");
    (void)(*store)->add_event(run->id, s, "attempt.launched", {{"pid", 1000 + i}});
    (void)(*store)->set_outputs(run->id, s, {{"path", "/data/" + s}});
    (void)(*store)->set_metrics(run->id, s, {{"tau", 2.5}});
    if (i % 10 != 0) (void)(*store)->finish_attempt(run->id, s, 1, StageState::kSucceeded, 0, "");
  }
  std::map<std::string, std::string> env = {{"FERRY_HOME", home.path()}, {"NO_COLOR", "1"}};
  std::string ferry = testing::bin_dir() + "/ferry";
  double floor = median_ms({ferry, "--help"}, env, repeats);
  double table = median_ms({ferry, "status", run->id}, env, repeats);
  double json = median_ms({ferry, "status", run->id, "--json"}, env, repeats);
  std::printf("ferry status on a %d-stage run, median of %d runs (wall, whole process):\n", stages, repeats);
  std::printf("  ferry --help (process floor)  %7.1f ms\n", floor);
  std::printf("  ferry status RUN              %7.1f ms   goal <= 50 ms: %s\n", table, table <= 50 ? "met" : "NOT met");
  std::printf("  ferry status RUN --json       %7.1f ms   goal <= 50 ms: %s\n", json, json <= 50 ? "met" : "NOT met");
  return 0;
}
