// The `ferry` command line as a user meets it: --version, --help, an unknown flag
// (exit 2 with that command's usage), --json where it is offered, and
// `status --watch` following a live run to its end. The real binary, real runs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::read_text;
using testing::write_text;

class CliTest : public testing::FerryHomeTest {};

TEST_F(CliTest, VersionAndHelp) {
  auto v = ferry({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind("ferry ", 0), 0u) << v.out;
  EXPECT_NE(v.out.find("agent protocol"), std::string::npos) << v.out;
  auto h = ferry({"logs", "--help"});
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--follow"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("--attempt"), std::string::npos) << h.out;
}

TEST_F(CliTest, UnknownFlagsAndCommandsExitTwoWithTheCommandsUsage) {
  auto r = ferry({"status", "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--watch"), std::string::npos) << "status's usage, not the top-level one\n" << r.err;
  auto logs = ferry({"logs", "run-1", "stage", "--json"});  // logs offers no --json: refused, not ignored
  EXPECT_EQ(logs.exit_code, 2) << logs.out;
  auto cmd = ferry({"sttaus"});
  EXPECT_EQ(cmd.exit_code, 2);
  EXPECT_NE(cmd.err.find("ferry: unknown command 'sttaus' (did you mean 'status'?)"), std::string::npos) << cmd.err;
  auto far = ferry({"frobnicate"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_NE(far.err.find("ferry: unknown command 'frobnicate'\n"), std::string::npos) << far.err;
  auto missing = ferry({"run"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("workflow"), std::string::npos) << missing.err;
  auto bad_param = ferry({"run", write_workflow("name: w\nstages:\n  s:\n    run: 'true'\n"), "-p", "novalue"});
  EXPECT_EQ(bad_param.exit_code, 2);
  EXPECT_NE(bad_param.err.find("NAME=VALUE"), std::string::npos) << bad_param.err;
}

// A stage name mistyped in `logs` is answered with the one meant, or the run's stages.
TEST_F(CliTest, AStageThatIsNotInTheRunIsAnsweredWithItsStages) {
  auto r = ferry({"run", write_workflow("name: st\nstages:\n  prepare:\n    run: 'true'\n  train:\n    needs: prepare\n"
                                        "    run: 'true'\n")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto typo = ferry({"logs", "st-1", "prepere"});
  EXPECT_NE(typo.exit_code, 0);
  EXPECT_NE(typo.err.find("has no stage 'prepere' (did you mean 'prepare'?)"), std::string::npos) << typo.err;
  auto guess = ferry({"logs", "st-1", "eval"});
  EXPECT_NE(guess.exit_code, 0);
  EXPECT_NE(guess.err.find("has no stage 'eval' (its stages: prepare, train)"), std::string::npos) << guess.err;
}

TEST_F(CliTest, RunJsonPrintsTheFinishedRunOnStdoutAndProgressOnStderr) {
  auto wf = write_workflow(R"(name: js
params:
  word: a
stages:
  s:
    run: echo ${{ params.word }}
)");
  auto r = ferry({"run", wf, "-p", "word=b", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << "stdout is not only JSON:\n" << r.out;
  EXPECT_EQ(j["id"], "js-1");
  EXPECT_EQ(j["state"], "succeeded");
  EXPECT_EQ(j["params"]["word"], "b");
  EXPECT_EQ(j["stages"][0]["state"], "succeeded");
  EXPECT_NE(r.err.find("run js-1"), std::string::npos) << "progress belongs on stderr\n" << r.err;
}

TEST_F(CliTest, ValidateJsonListsEveryErrorWithItsPlace) {
  auto wf = write_workflow("name: bad\nstages:\n  a:\n    run: 'true'\n    needs: nope\n  b:\n    rnu: x\n");
  auto r = ferry({"validate", wf, "--json"});
  EXPECT_EQ(r.exit_code, 2);
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["ok"], false);
  ASSERT_GE(j["errors"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["errors"][0]["line"], 5) << j.dump(2);  // needs: nope
  EXPECT_GT(j["errors"][0]["column"].get<int>(), 0);
  auto good = ferry({"validate", write_workflow("name: ok\nstages:\n  a:\n    run: 'true'\n"), "--json"});
  EXPECT_EQ(good.exit_code, 0) << good.out;
  EXPECT_EQ(nlohmann::json::parse(good.out)["stages"], nlohmann::json::array({"a"}));
}

// Newcomer report U10: `device: gpu` (or cuda) in a ferry whose eval engine has no
// CUDA must say so before the run, not only when the eval starts.
TEST_F(CliTest, ValidateWarnsThatAnEvalOnTheGpuRunsOnCpuOnlyInThisBuild) {
  auto wf = write_workflow(
      "name: gpu\nstages:\n  eval:\n    kind: eval\n    target: t\n    drafter: d\n    prompts: p.jsonl\n"
      "    device: gpu\n");
  auto r = ferry({"validate", wf});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;  // a warning: a host may run a CUDA worker of its own
  auto j = ferry({"validate", wf, "--json"});
  EXPECT_EQ(j.exit_code, 0) << j.out << j.err;
  auto parsed = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_TRUE(parsed.is_object()) << j.out;
  if (std::string(FERRY_EVAL_ENGINE_DEVICE) != "cpu") {
    EXPECT_TRUE(parsed["warnings"].empty()) << j.out;
    GTEST_SKIP() << "this build's eval engine is '" << FERRY_EVAL_ENGINE_DEVICE << "', not CPU only";
  }
  EXPECT_NE(r.err.find(wf + ":3:3: warning: stage 'eval'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("evaluates on CPU only"), std::string::npos) << r.err;
  ASSERT_EQ(parsed["warnings"].size(), 1u) << j.out;
  EXPECT_NE(parsed["warnings"][0].get<std::string>().find("device: cpu"), std::string::npos) << j.out;
  auto cpu = ferry({"validate", write_workflow("name: c\nstages:\n  eval:\n    kind: eval\n    target: t\n"
                                               "    drafter: d\n    prompts: p.jsonl\n",
                                               "cpu.yaml")});
  EXPECT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_EQ(cpu.err.find("warning"), std::string::npos) << cpu.err;
}

// Newcomer report U4: the README's examples/... paths did not exist for an installed
// user. `ferry examples DIR` copies them (here: the source tree's, as from a build),
// never over a file already there.
TEST_F(CliTest, ExamplesCopiesTheShippedWorkflowsAndNeverOverwrites) {
  const std::string dir = work_.file("ex");
  auto r = ferry({"examples", dir});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(read_text(dir + "/first/workflow.yaml"),
            read_text(std::string(FERRY_SOURCE_DIR) + "/examples/first/workflow.yaml"));
  EXPECT_TRUE(testing::exists(dir + "/dflash-tiny/watch.yaml"));
  EXPECT_FALSE(testing::exists(dir + "/dflash-tiny/corpus.cc")) << "the demo's C++ sources are not examples";
  EXPECT_NE(r.out.find("ferry run " + dir + "/first/workflow.yaml"), std::string::npos) << r.out;
  auto v = ferry({"validate", dir + "/hello/workflow.yaml"});
  EXPECT_EQ(v.exit_code, 0) << v.err;

  write_text(dir + "/hello/workflow.yaml", "mine");
  auto again = ferry({"examples", dir});
  EXPECT_EQ(again.exit_code, 2) << again.out << again.err;
  EXPECT_NE(again.err.find(dir + "/hello/workflow.yaml"), std::string::npos) << again.err;
  EXPECT_EQ(read_text(dir + "/hello/workflow.yaml"), "mine");
  auto help = ferry({"--help"});
  EXPECT_NE(help.out.find("ferry examples"), std::string::npos) << help.out;
}

TEST_F(CliTest, StatusWatchFollowsALiveRunToItsEnd) {
  std::string release = work_.file("release");
  auto wf = write_workflow(R"(name: watched
stages:
  wait:
    run: |
      while [ ! -f )" + release +
                           R"( ]; do sleep 0.05; done
  after:
    needs: wait
    run: exit 5
)");
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  ASSERT_GT(coordinator, 0);
  // The event: the run is recorded and its first stage runs.
  ASSERT_TRUE(testing::wait_until(
      [&] { return ferry({"status", "watched-1"}).out.find("running") != std::string::npos; },
      std::chrono::seconds(30)))
      << read_text(work_.file("run.log"));
  pid_t watcher = spawn_ferry({"status", "watched-1", "--watch", "--interval", "0.1"}, "watch.log");
  ASSERT_GT(watcher, 0);
  ASSERT_TRUE(
      testing::wait_until([&] { return read_text(work_.file("watch.log")).find("running") != std::string::npos; },
                          std::chrono::seconds(30)));
  EXPECT_TRUE(testing::process_running(watcher)) << "watch ended while the run was live";
  write_text(release, "go");
  EXPECT_EQ(testing::wait_process(coordinator, 60), 1);
  EXPECT_EQ(testing::wait_process(watcher, 30), 1) << "watch exits as the run did (a stage failed)";
  std::string shown = read_text(work_.file("watch.log"));
  size_t last_table = shown.rfind("wait ");
  ASSERT_NE(last_table, std::string::npos) << shown;
  EXPECT_NE(shown.find("failed", last_table), std::string::npos) << "the final table shows the end\n" << shown;
  EXPECT_NE(shown.find("running"), std::string::npos) << shown;
}

// A stored eval report whose fields have other types (an old or hostile host's
// result, review 3 N6): `ferry report` writes the page and shows the eval as what
// it is, a report without a verdict, instead of aborting on a type error.
TEST_F(CliTest, ReportOfAMalformedStoredEvalWritesThePage) {
  auto r = ferry({"run", write_workflow("name: odd\nstages:\n  s:\n    run: 'true'\n")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string detail =
      R"({"attempt":"one","drafter":7,"candidate":"x","reference_run":{"response_taus":5,"tau":"2"},)"
      R"("gate_passed":1,"diff":{"fields":[1,"a"],"tensors":{}},"responses":"many"})";
  auto put = testing::run_process({"sqlite3", "-cmd", ".timeout 10000", home_.file("ferry.db"),
                                   "INSERT INTO events(run_id, stage, ts_ms, type, detail) VALUES "
                                   "('odd-1', 's', 1, 'eval.report', '" + detail + "')"});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  auto page = ferry({"report", "odd-1", "-o", work_.file("odd.html")});
  EXPECT_EQ(page.exit_code, 0) << page.out << page.err;  // not 128+SIGABRT (terminate)
  std::string html = read_text(work_.file("odd.html"));
  EXPECT_NE(html.find("gate-fail"), std::string::npos) << "no verdict is no pass\n" << html;
  auto json = ferry({"report", "odd-1", "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
}

}  // namespace
}  // namespace ferry
