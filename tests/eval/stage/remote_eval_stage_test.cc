// Eval stages on a host (issue 17) through `ferry run`, on local hosts: the eval
// worker is sent into the host's workdir by hash, runs there as a detached job,
// and its report reaches the store exactly as an eval in the coordinator would
// put it there. The models are the engine's deterministic tiny ones
// (ferry-tiny-models suite), written by the test.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/eval/stage/comparable_report.h"
#include "tests/support/ferry_cli.h"
#include "tests/support/process.h"
#include "tests/support/tiny_suite_test.h"

namespace ferry {
namespace {

using testing::read_text;
using testing::write_text;

class RemoteEvalStageTest : public testing::TinySuiteTest {
 protected:
  // The events of one stage, as {type, detail} in the order recorded.
  std::vector<std::pair<std::string, nlohmann::json>> events(const std::string& run, const std::string& stage_name) {
    std::vector<std::pair<std::string, nlohmann::json>> out;
    for (const auto& e : ferry.events(run, stage_name)) out.emplace_back(e["type"], e["detail"]);
    return out;
  }
  nlohmann::json report(const std::string& run, const std::string& stage_name) {
    for (auto& [type, detail] : events(run, stage_name)) {
      if (type == "eval.report") return detail;
    }
    return nullptr;
  }
};

constexpr const char* kDrafters = "    drafter: oracle-agree\n    reference: oracle-disagree\n";
constexpr const char* kEvalFields = R"(    max_new_tokens: 16
    threads: 1
    gate: {min_tau: 3.5, min_ratio_to_reference: 2}
)";

// An eval of the suite's models as the host finds them under `folder`, with the
// prompts shipped from the coordinator.
std::string suite_models_under(const std::string& folder) {
  std::string yaml = "    target: " + folder + "/oracle-target\n";
  yaml += "    drafter: " + folder + "/oracle-agree\n";
  yaml += "    reference: " + folder + "/oracle-disagree\n";
  return yaml + "    prompts: coordinator:oracle-prompts.jsonl\n" + kEvalFields;
}

// The same files evaluated three ways: in the coordinator, on a local host whose
// workdir holds them, and on a host that has only the models (by absolute path)
// and gets its prompts shipped from the coordinator. Every figure must agree.
TEST_F(RemoteEvalStageTest, EvalOnAHostGivesTheSameReportAsInTheCoordinator) {
  std::string wf = suite_.file("wf.yaml");
  write_text(wf, "name: where\nhosts:\n  box: {transport: local, workdir: " + suite_.path() +
                     "}\n  far: {transport: local, workdir: " + suite_.file("far") +
                     "}\nstages:\n"
                     "  here:\n    kind: eval\n    target: oracle-target\n    prompts: oracle-prompts.jsonl\n" +
                     kDrafters + kEvalFields +
                     "  there:\n    kind: eval\n    host: box\n    needs: here\n    target: oracle-target\n"
                     "    prompts: oracle-prompts.jsonl\n" +
                     kDrafters + kEvalFields + "  shipped:\n    kind: eval\n    host: far\n    needs: there\n" +
                     suite_models_under("${{ hosts.box.workdir }}"));
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = status("where-1");
  nlohmann::json here = report("where-1", "here");
  ASSERT_TRUE(here.is_object()) << "no eval.report for the coordinator's eval";
  EXPECT_GT(here["candidate"]["tau"].get<double>(), 3.5);
  for (const char* name : {"there", "shipped"}) {
    SCOPED_TRACE(name);
    auto s = stage(st, name);
    EXPECT_EQ(s["state"], "succeeded") << s.dump();
    EXPECT_EQ(s["host"], name == std::string("there") ? "box" : "far");
    nlohmann::json rep = report("where-1", name);
    ASSERT_TRUE(rep.is_object()) << "no eval.report";
    EXPECT_EQ(testing::comparable_report(rep).dump(1), testing::comparable_report(here).dump(1));
    EXPECT_EQ(s["metrics"]["tau"], stage(st, "here")["metrics"]["tau"]);
    EXPECT_EQ(s["outputs"]["tau"], stage(st, "here")["outputs"]["tau"]);
    // The readable report is in `ferry logs`, as for the coordinator's eval.
    auto logs = ferry({"logs", "where-1", name});
    EXPECT_NE(logs.out.find("DFlash drafter eval"), std::string::npos) << logs.out;
    EXPECT_NE(logs.out.find("gate: PASSED"), std::string::npos) << logs.out;
    // Progress lines marked alike in both logs: the same lines (but the worker's
    // own first line and the paths being loaded, which are each side's, and the
    // speeds, ETAs and CPU-contention warnings, which are each run's), then the report.
    auto progress = [](const std::string& log) {
      std::string out, line;
      std::istringstream in(log);
      while (std::getline(in, line)) {
        // A timed pass's CPU-contention warning depends on the machine's load then.
        bool own = line.rfind("[eval] worker:", 0) == 0 || line.rfind("[eval] loading", 0) == 0 ||
                   line.find("threads' time (") != std::string::npos;
        if (line.rfind("[eval] ", 0) != 0 || own) continue;
        if (line.rfind("[eval] progress {", 0) == 0) {
          auto j = nlohmann::json::parse(line.substr(std::string("[eval] progress ").size()));
          j.erase("tokens_per_s");
          j.erase("eta_s");
          line = "[eval] progress " + j.dump();
        } else if (auto speed = line.find(" tok/s, ETA "); speed != std::string::npos) {
          line.erase(line.rfind(", ", speed));
        }
        out += line + "\n";
      }
      return out;
    };
    auto here_logs = ferry({"logs", "where-1", "here"}).out;
    EXPECT_NE(progress(here_logs).find("[eval] decoding 20 prompts"), std::string::npos) << here_logs;
    EXPECT_EQ(progress(logs.out), progress(here_logs));
  }
  // The worker went into each host's workdir under its hash; the prompts to `far` only.
  auto worker_sent = [&](const std::string& name) {
    for (auto& [type, d] : events("where-1", name)) {
      if (type == "eval.worker") return d;
    }
    return nlohmann::json();
  };
  auto w = worker_sent("shipped");
  ASSERT_TRUE(w.is_object());
  EXPECT_TRUE(testing::exists(suite_.file("far") + "/" + w["path"].get<std::string>()));
  EXPECT_EQ(read_text(suite_.file("far") + "/" + w["path"].get<std::string>()),
            read_text(testing::bin_dir() + "/ferry-eval"));
  auto prompts = testing::run_process({"sh", "-c", "ls " + suite_.file("far") + "/.ferry/eval-prompts/"});
  EXPECT_NE(prompts.out.find("oracle-prompts.jsonl"), std::string::npos) << prompts.out;
  EXPECT_GT(w["bytes_sent"].get<int64_t>(), 0);
  // A second run finds the worker in place: nothing is sent again.
  r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (auto& [type, d] : events("where-2", "shipped")) {
    if (type == "eval.worker") {
      EXPECT_EQ(d["bytes_sent"], 0) << d.dump();
    }
  }
}

// A host whose dynamic loader cannot link libtorch: the host's env points
// LD_LIBRARY_PATH at a folder whose libtorch_cpu.so.1.13 is an empty file (a
// broken install; the loader takes the first it finds, so the good one in
// /usr/lib is never reached). The worker cannot start there, so the stage fails
// at once, with the loader's words and what to install.
TEST_F(RemoteEvalStageTest, HostWithoutAWorkingLibtorchFailsTheStageAtOnceSayingWhatToInstall) {
  ASSERT_EQ(testing::run_process({"mkdir", "-p", suite_.file("broken-libtorch")}).exit_code, 0);
  write_text(suite_.file("broken-libtorch/libtorch_cpu.so.1.13"), "");
  std::string wf = suite_.file("wf.yaml");
  write_text(wf, "name: nolib\nhosts:\n  bare:\n    workdir: " + suite_.path() +
                     "\n    env: {LD_LIBRARY_PATH: " + suite_.file("broken-libtorch") +
                     "}\nstages:\n  eval:\n    kind: eval\n    host: bare\n    target: oracle-target\n"
                     "    prompts: oracle-prompts.jsonl\n" +
                     kDrafters + kEvalFields);
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto s = stage(status("nolib-1"), "eval");
  EXPECT_EQ(s["state"], "failed");
  std::string error = s.value("error", "");
  EXPECT_NE(error.find("host 'bare' cannot run evals"), std::string::npos) << error;
  EXPECT_NE(error.find("libtorch_cpu.so.1.13"), std::string::npos) << error;
  EXPECT_NE(error.find("apt-get install libtorch1.13"), std::string::npos) << error;
  // No model was loaded: the loader stopped the worker before main.
  EXPECT_EQ(ferry({"logs", "nolib-1", "eval"}).out.find("loading target"), std::string::npos);
  std::printf("stage failed after %lld ms: %s\n", static_cast<long long>(s.value("duration_ms", int64_t{-1})),
              error.c_str());
}

// `ferry hosts check` runs the eval worker's own check on each host, under the
// host's env: one host can run evals (with the figures the worker reports and the
// size of the model its eval stage names), the other's loader cannot link libtorch.
TEST_F(RemoteEvalStageTest, HostsCheckShowsWhichHostsCanRunEvalsAndWhyNot) {
  ASSERT_EQ(testing::run_process({"mkdir", "-p", suite_.file("broken-libtorch")}).exit_code, 0);
  write_text(suite_.file("broken-libtorch/libtorch_cpu.so.1.13"), "");
  std::string wf = suite_.file("wf.yaml");
  write_text(wf, "name: caps\nhosts:\n  box: {workdir: " + suite_.path() + "}\n  bare:\n    workdir: " +
                     suite_.file("bare") + "\n    env: {LD_LIBRARY_PATH: " + suite_.file("broken-libtorch") +
                     "}\nstages:\n  eval:\n    kind: eval\n    host: box\n    target: oracle-target\n"
                     "    prompts: oracle-prompts.jsonl\n" +
                     kDrafters + kEvalFields);
  auto r = ferry({"hosts", "check", wf, "--json"});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  nlohmann::json box, bare;
  for (const auto& h : j["hosts"]) (h["name"] == "box" ? box : bare) = h;
  ASSERT_TRUE(box.contains("eval")) << j.dump(2);
  EXPECT_EQ(box["eval"]["can_run"], true) << box.dump(2);
  EXPECT_EQ(box["eval"]["libtorch"].get<std::string>().rfind("1.13", 0), 0u) << box.dump(2);
  EXPECT_GE(box["eval"]["cores"].get<int>(), 1);
  EXPECT_TRUE(box["eval"]["bf16"].is_boolean());
  ASSERT_EQ(box["eval_models"].size(), 1u) << box.dump(2);
  EXPECT_EQ(box["eval_models"][0]["bytes"].get<int64_t>(),
            static_cast<int64_t>(read_text(suite_.file("oracle-target/model.safetensors")).size() +
                                 read_text(suite_.file("oracle-target/config.json")).size()));
  ASSERT_TRUE(bare.contains("eval")) << j.dump(2);
  EXPECT_EQ(bare["eval"]["can_run"], false) << bare.dump(2);
  EXPECT_NE(bare["eval"]["why"].get<std::string>().find("libtorch_cpu.so.1.13"), std::string::npos) << bare.dump(2);
  EXPECT_NE(bare["eval"]["fix"].get<std::string>().find("apt-get install libtorch1.13"), std::string::npos);
  // And the table says it in words.
  auto text = ferry({"hosts", "check", wf}).out;
  EXPECT_NE(text.find("evals: yes — libtorch 1.13"), std::string::npos) << text;
  EXPECT_NE(text.find("evals: NO — the eval worker does not start"), std::string::npos) << text;
  std::printf("%s", text.c_str());
}

// `ferry cancel` reaches the worker on its host like any job: SIGTERM to its
// group, the engine stops between steps, the stage ends cancelled.
TEST_F(RemoteEvalStageTest, CancelStopsTheWorkerOnItsHost) {
  std::string wf = suite_.file("wf.yaml");
  write_text(wf, "name: stop\nhosts:\n  box: {workdir: " + suite_.path() +
                     "}\nstages:\n  eval:\n    kind: eval\n    host: box\n    target: oracle-target\n"
                     "    prompts: oracle-prompts.jsonl\n" +
                     kDrafters +
                     "    max_new_tokens: 4000\n    threads: 1\n");  // minutes: cancelled long before the end
  auto env = ferry.env();
  pid_t coordinator = testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, env, suite_.file("run.log"));
  ASSERT_GT(coordinator, 0);
  std::string log = home_.path() + "/logs/stop-1/eval/1.log";
  ASSERT_TRUE(testing::wait_until([&] { return read_text(log).find("[eval] decoding") != std::string::npos; },
                                  std::chrono::seconds(60)))
      << read_text(suite_.file("run.log"));
  int64_t worker = 0;
  for (auto& [type, d] : events("stop-1", "eval")) {
    if (type == "attempt.launched") worker = d.value("pid", int64_t{0});
  }
  ASSERT_GT(worker, 0);
  ASSERT_TRUE(testing::process_running(static_cast<pid_t>(worker)));
  EXPECT_EQ(ferry({"cancel", "stop-1"}).exit_code, 0);
  EXPECT_EQ(testing::wait_process(coordinator, 60), 130) << read_text(suite_.file("run.log"));
  auto s = stage(status("stop-1"), "eval");
  EXPECT_EQ(s["state"], "cancelled") << s.dump();
  EXPECT_TRUE(testing::wait_until([&] { return !testing::process_running(static_cast<pid_t>(worker)); },
                                  std::chrono::seconds(10)));
}

// A worker installed on the host, named by the host's env, is run as it is:
// nothing is sent, and the report is the same.
TEST_F(RemoteEvalStageTest, AWorkerInstalledOnTheHostIsUsedAndNothingIsSent) {
  std::string wf = suite_.file("wf.yaml");
  write_text(wf, "name: installed\nhosts:\n  box:\n    workdir: " + suite_.file("box") +
                     "\n    env: {FERRY_EVAL_WORKER: " + testing::bin_dir() +
                     "/ferry-eval}\nstages:\n  eval:\n    kind: eval\n    host: box\n" +
                     suite_models_under("${{ hosts.box.workdir }}/.."));
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json worker;
  for (auto& [type, d] : events("installed-1", "eval")) {
    if (type == "eval.worker") worker = d;
  }
  EXPECT_EQ(worker.value("installed", false), true) << worker.dump();
  EXPECT_EQ(worker.value("path", ""), testing::bin_dir() + "/ferry-eval");
  EXPECT_FALSE(testing::exists(suite_.file("box") + "/.ferry/eval-worker"));
  EXPECT_GT(stage(status("installed-1"), "eval")["metrics"]["tau"].get<double>(), 3.5);
}

}  // namespace
}  // namespace ferry
