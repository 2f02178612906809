// Strict scripts end to end (issue 41, newcomer report U1): the real `ferry` and
// agent on the local host run a command stage's script with bash -eo pipefail by
// default, so a failing command mid-script, or the first part of a pipe, fails the
// stage; `shell: sh` keeps /bin/sh -c; a template shell runs the script's file; a
// job whose PATH has no bash falls back to sh -e and says so, and `shell: bash`
// there fails naming bash.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::read_text;

class StrictScriptTest : public testing::FerryHomeTest {
 protected:
  // Runs a workflow of one stage `s` with `body` (the stage's keys, indented 4);
  // the run's exit code.
  int run_one(const std::string& name, const std::string& body) {
    auto r = ferry({"run", write_workflow("name: " + name + "\nstages:\n  s:\n" + body, name + ".yaml")});
    last_output_ = r.out + r.err;
    return r.exit_code;
  }
  std::string log_of(const std::string& run) { return ferry({"logs", run, "s"}).out; }

  std::string last_output_;
};

// The README's first example (examples/first/workflow.yaml) as a newcomer breaks
// it: `check` expects 999 lines, and its `test` fails before the echo after it.
// Before, /bin/sh -c ran the echo and the stage, and the run, succeeded.
TEST_F(StrictScriptTest, TheFirstExampleWithAWrongCountFailsItsCheck) {
  const std::string source = read_text(std::string(FERRY_SOURCE_DIR) + "/examples/first/workflow.yaml");
  const std::string expected = "= ${{ stages.make.outputs.lines }}\n";
  const size_t at = source.find("test \"$(wc -l < in/numbers.txt)\" " + expected);
  ASSERT_NE(at, std::string::npos) << "the example's check changed:\n" << source;
  std::string broken = source;
  broken.replace(broken.find(expected, at), expected.size(), "= 999\n");

  auto bad = ferry({"run", write_workflow(broken, "broken.yaml")});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  auto st = status("first-1");
  EXPECT_EQ(st["state"], "failed");
  EXPECT_EQ(stage(st, "make")["state"], "succeeded");
  EXPECT_EQ(stage(st, "check")["state"], "failed");
  EXPECT_EQ(stage(st, "check")["exit_code"], 1);
  // `test` says nothing; the log names it, as written, and its line in `check`'s script.
  // The echo after it did not run.
  const std::string named = "ferry: line 1: `test \"$(wc -l < in/numbers.txt)\" = 999` exited 1\n";
  EXPECT_EQ(ferry({"logs", "first-1", "check"}).out, named);
  EXPECT_NE(bad.out.find("  | " + named), std::string::npos) << "the failure's tail shows it\n" << bad.out;

  auto good = ferry({"run", std::string(FERRY_SOURCE_DIR) + "/examples/first/workflow.yaml"});
  ASSERT_EQ(good.exit_code, 0) << good.out << good.err;
  EXPECT_EQ(status("first-2")["state"], "succeeded");
  EXPECT_EQ(ferry({"logs", "first-2", "check"}).out, "evaluator has all 200 lines\n");
}

TEST_F(StrictScriptTest, AFailingCommandMidScriptFailsTheStage) {
  EXPECT_EQ(run_one("mid", "    run: |\n      echo X >&2\n      false\n      echo after\n"), 1) << last_output_;
  auto s = stage(status("mid-1"), "s");
  EXPECT_EQ(s["state"], "failed");
  EXPECT_EQ(s["exit_code"], 1);
  const std::string log = log_of("mid-1");
  EXPECT_NE(log.find("X"), std::string::npos) << log;
  EXPECT_EQ(log.find("after"), std::string::npos) << log;
}

TEST_F(StrictScriptTest, AFailingFirstPartOfAPipeFailsTheStage) {
  EXPECT_EQ(run_one("pipe", "    run: false | cat\n"), 1) << last_output_;
  EXPECT_EQ(stage(status("pipe-1"), "s")["state"], "failed");
}

// `shell: sh` (and a workflow-wide shell: sh) is /bin/sh -c: only the last status counts.
TEST_F(StrictScriptTest, ShellShKeepsTheOldSemantics) {
  auto r = ferry({"run", write_workflow(R"(name: old
stages:
  mid:
    shell: sh
    run: |
      false
      echo after
  pipe:
    shell: sh
    run: false | cat
)")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = status("old-1");
  EXPECT_EQ(stage(st, "mid")["state"], "succeeded");
  EXPECT_EQ(stage(st, "pipe")["state"], "succeeded");
  EXPECT_EQ(ferry({"logs", "old-1", "mid"}).out, "after\n");

  auto wide = ferry({"run", write_workflow("name: wide\nshell: sh\nstages:\n  s:\n    run: |\n      false\n"
                                           "      echo after\n",
                                           "wide.yaml")});
  ASSERT_EQ(wide.exit_code, 0) << wide.out << wide.err;
  EXPECT_EQ(ferry({"logs", "wide-2", "s"}).out, "after\n");
}

// A template gets the script's file: python3 runs it as Python (its exit code is
// the stage's), bash -x traces it.
TEST_F(StrictScriptTest, ATemplateShellRunsTheScriptsFile) {
  if (testing::run_process({"sh", "-c", "command -v python3"}).exit_code != 0) {
    GTEST_SKIP() << "no python3 on this machine";
  }
  auto r = ferry({"run", write_workflow(R"(name: tmpl
stages:
  py:
    shell: python3 {0}
    run: |
      import sys
      print("six times seven is", 6 * 7)
      print("argv0", sys.argv[0].rsplit("/", 1)[-1])
  pyfail:
    shell: python3 {0}
    run: |
      import sys
      sys.exit(4)
  traced:
    shell: bash -x {0}
    run: |
      word=traced
      echo "$word"
)")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // pyfail
  auto st = status("tmpl-1");
  EXPECT_EQ(stage(st, "py")["state"], "succeeded");
  EXPECT_EQ(ferry({"logs", "tmpl-1", "py"}).out, "six times seven is 42\nargv0 script\n");
  EXPECT_EQ(stage(st, "pyfail")["state"], "failed");
  EXPECT_EQ(stage(st, "pyfail")["exit_code"], 4);
  EXPECT_EQ(stage(st, "traced")["state"], "succeeded");
  const std::string traced = ferry({"logs", "tmpl-1", "traced"}).out;
  EXPECT_NE(traced.find("+ word=traced\n"), std::string::npos) << traced;
  EXPECT_NE(traced.find("\ntraced\n"), std::string::npos) << traced;
}

// The job's PATH (the stage's env) names a folder without bash: the default runs
// the script with sh -e, says so on the log's first line, and still stops at a
// failing command (not at a failing pipe: sh has no pipefail).
TEST_F(StrictScriptTest, WithoutBashOnTheJobsPathTheDefaultIsShDashEAndSaysSo) {
  testing::TempDir no_bash;
  auto r = ferry({"run", write_workflow(R"(name: nobash
stages:
  s:
    env: {PATH: )" + no_bash.path() + R"(}
    run: |
      echo one
      false | echo two
      false
      echo after
)")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto s = stage(status("nobash-1"), "s");
  EXPECT_EQ(s["state"], "failed");
  EXPECT_EQ(s["exit_code"], 1);
  EXPECT_EQ(log_of("nobash-1"), "ferry: this host has no bash; the script runs with sh -e (no pipefail)\none\ntwo\n");
}

TEST_F(StrictScriptTest, ShellBashFailsTheStageWhereTheJobsPathHasNoBash) {
  testing::TempDir no_bash;
  EXPECT_EQ(run_one("needbash", "    shell: bash\n    env: {PATH: " + no_bash.path() + "}\n    run: echo ran\n"), 1)
      << last_output_;
  auto s = stage(status("needbash-1"), "s");
  EXPECT_EQ(s["state"], "failed");
  EXPECT_NE(s.value("error", std::string()).find("no bash"), std::string::npos) << s.dump();
  EXPECT_EQ(log_of("needbash-1").find("ran"), std::string::npos) << "the script ran without bash";
}

TEST_F(StrictScriptTest, AnUnknownShellIsRefusedBeforeTheRun) {
  auto wf = write_workflow("name: z\nstages:\n  s:\n    run: echo\n    shell: zsh\n");
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(wf + ":5:12: stage 's' shell: 'zsh' is not a shell ferry knows"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(ferry({"runs", "--json"}).out).size(), 0u);
}

}  // namespace
}  // namespace ferry
