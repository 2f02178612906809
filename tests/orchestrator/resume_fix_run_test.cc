// Fix, then resume (issue 41, newcomer report U3): `ferry resume` reads the run's
// workflow file again, plans before it starts (keep an unchanged success, run a
// changed or failed stage and everything downstream of it) and prints why;
// --dry-run prints the plan and runs nothing; --stored resumes with the text the
// run stored; a file that no longer parses, or that lost a stage others need, is
// an error naming the file. The real `ferry` and agent on the local host.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::read_text;

// a → b → c; `b_run` is b's command. Each stage counts its runs in a file of the
// host's workdir; b says the run's -p word.
std::string three_stages(const std::string& a_run, const std::string& b_run) {
  return "name: fix\nparams:\n  word: plain\nstages:\n  a:\n    run: " + a_run +
         "\n  b:\n    needs: a\n    run: |\n      echo b >> b.count\n      echo word ${{ params.word }}\n      " +
         b_run + "\n  c:\n    needs: b\n    run: echo c >> c.count\n";
}

class ResumeFixTest : public testing::FerryHomeTest {
 protected:
  // Runs the three stages with b failing (exit 7) and -p word=given: run fix-1.
  void run_with_b_failing() {
    wf_ = write_workflow(three_stages("echo a >> a.count", "exit 7"));
    auto r = ferry({"run", wf_, "-p", "word=given"});
    ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
    auto st = status("fix-1");
    ASSERT_EQ(stage(st, "b")["state"], "failed");
    ASSERT_EQ(stage(st, "c")["state"], "skipped");
  }
  std::string host_file(const std::string& name) { return read_text(home_.path() + "/hosts/local/" + name); }
  // Every attempt the store holds for the run, as "stage:attempt:state" lines.
  std::string attempts() {
    auto r = testing::run_process({"sqlite3", "-cmd", ".timeout 10000", home_.file("ferry.db"),
                                   "SELECT stage || ':' || attempt || ':' || state FROM attempts WHERE "
                                   "run_id='fix-1' ORDER BY stage, attempt"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  // After run_with_b_failing: the file becomes `text`, and `ferry resume fix-1` must
  // refuse it (exit 2) and run nothing; its result.
  testing::ProcessResult resume_refused(const std::string& text) {
    const std::string before = attempts();
    write_workflow(text);
    auto r = ferry({"resume", "fix-1"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(attempts(), before) << "an attempt started";
    return r;
  }

  std::string wf_;
};

TEST_F(ResumeFixTest, DryRunPrintsThePlanAndRunsNothing) {
  run_with_b_failing();
  write_workflow(three_stages("echo a >> a.count", "echo fixed"));
  const std::string before = attempts();
  auto plan = ferry({"resume", "--dry-run", "fix-1"});
  ASSERT_EQ(plan.exit_code, 0) << plan.out << plan.err;
  EXPECT_NE(plan.out.find("  keep      a  succeeded, unchanged\n"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("  run       b  attempt 1 failed; changed: command\n"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("  run       c  "), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("nothing ran"), std::string::npos) << plan.out;
  EXPECT_EQ(attempts(), before) << "the dry run started an attempt";
  EXPECT_EQ(stage(status("fix-1"), "b")["attempt"], 1);
  EXPECT_EQ(host_file("b.count"), "b\n");
  EXPECT_FALSE(testing::exists(home_.path() + "/hosts/local/c.count"));

  auto js = ferry({"resume", "-n", "fix-1", "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  auto j = nlohmann::json::parse(js.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << js.out;
  EXPECT_EQ(j["workflow_changed"], true);
  ASSERT_EQ(j["stages"].size(), 3u) << js.out;
  EXPECT_EQ(j["stages"][0]["action"], "keep");
  EXPECT_EQ(j["stages"][1]["action"], "run");
  EXPECT_EQ(j["stages"][2]["action"], "run");
  EXPECT_EQ(attempts(), before);
}

// The fix is picked up: b runs its new command as attempt 2 with the run's own -p,
// a keeps attempt 1, c runs. Then a's command changes on a run that succeeded: a
// and everything downstream of it run again.
TEST_F(ResumeFixTest, ResumeRunsTheFixedStageAndAChangedUpstreamRerunsItsDownstream) {
  run_with_b_failing();
  write_workflow(three_stages("echo a >> a.count", "echo fixed"));
  auto r = ferry({"resume", "fix-1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("  run       b  attempt 1 failed; changed: command\n"), std::string::npos) << r.out;
  auto st = status("fix-1");
  EXPECT_EQ(st["state"], "succeeded");
  EXPECT_EQ(stage(st, "a")["attempt"], 1);
  EXPECT_EQ(stage(st, "b")["attempt"], 2);
  EXPECT_EQ(stage(st, "b")["state"], "succeeded");
  EXPECT_EQ(stage(st, "c")["state"], "succeeded");
  EXPECT_EQ(host_file("a.count"), "a\n") << "a ran again";
  EXPECT_EQ(ferry({"logs", "fix-1", "b"}).out, "word given\nfixed\n") << "the run's -p word was lost";

  write_workflow(three_stages("echo A >> a.count", "echo fixed"));
  auto plan = ferry({"resume", "-n", "fix-1"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("  run       a  its definition changed: command\n"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("  run       b  upstream 'a' runs again\n"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("  run       c  upstream 'b' runs again\n"), std::string::npos) << plan.out;
  auto again = ferry({"resume", "fix-1"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  st = status("fix-1");
  EXPECT_EQ(stage(st, "a")["attempt"], 2);
  EXPECT_EQ(stage(st, "b")["attempt"], 3);
  EXPECT_EQ(stage(st, "c")["attempt"], 2);
  EXPECT_EQ(host_file("a.count"), "a\nA\n");
  EXPECT_EQ(host_file("c.count"), "c\nc\n");

  // Nothing changed now: nothing runs.
  auto nothing = ferry({"resume", "fix-1"});
  EXPECT_EQ(nothing.exit_code, 0) << nothing.err;
  EXPECT_EQ(host_file("a.count"), "a\nA\n");
  EXPECT_EQ(stage(status("fix-1"), "b")["attempt"], 3);
}

// --stored resumes as the run stored it, as ferry resume did before: b's old
// command fails again, as attempt 2.
TEST_F(ResumeFixTest, StoredIgnoresTheFile) {
  run_with_b_failing();
  write_workflow(three_stages("echo a >> a.count", "echo fixed"));
  auto plan = ferry({"resume", "fix-1", "--stored", "-n"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("(--stored)"), std::string::npos) << plan.out;
  EXPECT_EQ(plan.out.find("changed: command"), std::string::npos) << plan.out;
  auto r = ferry({"resume", "fix-1", "--stored"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto b = stage(status("fix-1"), "b");
  EXPECT_EQ(b["attempt"], 2);
  EXPECT_EQ(b["exit_code"], 7);
  EXPECT_EQ(ferry({"logs", "fix-1", "b"}).out, "word given\n");
}

// Found by ResumeRunsTheFixedStage…: the run's -p values were taken for defaults and
// dropped, so even an unchanged file reran a succeeded stage that used one, with the
// file's default.
TEST_F(ResumeFixTest, AnUnchangedFileKeepsTheRunsParamsAndItsSucceededStages) {
  const std::string gate = work_.file("gate");
  auto wf = write_workflow(
      "name: kept\nparams:\n  word: plain\nstages:\n  a:\n    run: echo ${{ params.word }} >> "
      "a.count\n  b:\n    needs: a\n    run: test -f " +
      gate + "\n");
  auto r = ferry({"run", wf, "-p", "word=given"});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  testing::write_text(gate, "open");
  auto plan = ferry({"resume", "kept-1", "-n"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("  keep      a  succeeded, unchanged\n"), std::string::npos) << plan.out;
  auto resumed = ferry({"resume", "kept-1"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_EQ(host_file("a.count"), "given\n");
  EXPECT_EQ(status("kept-1")["params"]["word"], "given");
}

// The run was started with -p word=given, and the file has no param 'word' now.
TEST_F(ResumeFixTest, AParamOfTheRunThatTheFileLostIsAnError) {
  run_with_b_failing();
  auto r =
      resume_refused("name: fix\nstages:\n  a:\n    run: echo a >> a.count\n  b:\n    needs: a\n    run: echo fixed\n");
  EXPECT_NE(r.err.find("-p word=given"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no param 'word'"), std::string::npos) << r.err;
}

// A file that no longer parses: exit 2, the file's error and what to do, nothing run.
// Found by this test: the parser's message and the advice were one line, run together.
TEST_F(ResumeFixTest, AFileThatNoLongerParsesIsAnErrorAndNothingRuns) {
  run_with_b_failing();
  auto r = resume_refused("name: fix\nstages:\n  a:\n    run: [unclosed\n");
  EXPECT_NE(r.err.find("ferry: " + wf_ + ":"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nferry resume: fix " + wf_ + ", or `ferry resume fix-1 --stored`"), std::string::npos)
      << r.err;
  EXPECT_EQ(status("fix-1")["state"], "failed");
  auto dry = ferry({"resume", "fix-1", "-n"});
  EXPECT_EQ(dry.exit_code, 2) << dry.out;
}

// b removed while c still needs it.
TEST_F(ResumeFixTest, RemovingAStageOthersNeedIsAnError) {
  run_with_b_failing();
  auto r =
      resume_refused("name: fix\nstages:\n  a:\n    run: echo a >> a.count\n  c:\n    needs: b\n    run: echo c\n");
  EXPECT_NE(r.err.find(wf_ + ":6:12: stage 'c' needs unknown stage 'b'"), std::string::npos) << r.err;
  EXPECT_EQ(host_file("a.count"), "a\n");
}

// `ferry run --dry-run FILE`: every stage would run; no run is recorded.
TEST_F(ResumeFixTest, RunDryRunPrintsEveryStageAndRecordsNoRun) {
  auto wf = write_workflow(three_stages("echo a >> a.count", "true"));
  auto r = ferry({"run", "--dry-run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* s : {"a", "b", "c"}) {
    EXPECT_NE(r.out.find(std::string("  run       ") + s + "  new run\n"), std::string::npos) << r.out;
  }
  EXPECT_EQ(nlohmann::json::parse(ferry({"runs", "--json"}).out).size(), 0u);
  EXPECT_FALSE(testing::exists(home_.path() + "/hosts/local/a.count"));
}

}  // namespace
}  // namespace ferry
