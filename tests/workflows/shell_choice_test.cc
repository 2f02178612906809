// `shell:` (issue 41, newcomer report U1): which values shell_problem accepts, the
// parser refusing any other at its file:line:col on the workflow, a host and a
// stage, and Workflow::shell_of picking the stage's, then its host's, then the
// workflow's.
#include "workflows/shell_choice.h"

#include <gtest/gtest.h>

#include <string>

#include "workflows/parser.h"

namespace ferry::workflow {
namespace {

// What parsing `yaml` as wf.yaml reports, a line a diagnostic; empty when nothing.
std::string diagnostics(const std::string& yaml) {
  Diagnostics d("wf.yaml");
  parse_workflow_collecting("wf.yaml", yaml, &d);
  return d.to_string();
}

TEST(ShellChoiceTest, BashShAndTemplatesAreShellsAndNothingElseIs) {
  EXPECT_EQ(shell_problem("bash"), "");
  EXPECT_EQ(shell_problem("sh"), "");
  EXPECT_EQ(shell_problem("python3 {0}"), "");
  EXPECT_EQ(shell_problem("bash -x {0}"), "");
  for (const char* bad : {"zsh", "", "/bin/bash", "python3 {1}", "Bash", "python3 0"}) {
    std::string problem = shell_problem(bad);
    EXPECT_NE(problem, "") << bad;
    EXPECT_EQ(problem.rfind(std::string("'") + bad + "'", 0), 0u) << problem;
  }
  EXPECT_NE(shell_problem("zsh").find("{0}"), std::string::npos) << "says how to write a template";
}

TEST(ShellChoiceTest, AnUnknownShellIsRefusedAtItsPlaceOnTheStageTheHostAndTheWorkflow) {
  EXPECT_EQ(diagnostics("name: x\nstages:\n  a:\n    run: echo\n    shell: zsh\n"),
            "wf.yaml:5:12: stage 'a' shell: " + shell_problem("zsh") + "\n");
  std::string host = diagnostics("name: x\nhosts:\n  box:\n    shell: fish\nstages:\n  a:\n    run: echo\n");
  EXPECT_EQ(host.rfind("wf.yaml:4:12: ", 0), 0u) << host;
  EXPECT_NE(host.find("'fish' is not a shell ferry knows"), std::string::npos) << host;
  std::string top = diagnostics("name: x\nshell: csh\nstages:\n  a:\n    run: echo\n");
  EXPECT_EQ(top, "wf.yaml:2:8: workflow shell: " + shell_problem("csh") + "\n");
  auto r = parse_workflow("wf.yaml", "name: x\nstages:\n  a:\n    run: echo\n    shell: zsh\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(ShellChoiceTest, AStagesShellIsItsOwnThenItsHostsThenTheWorkflows) {
  auto wf = parse_workflow("wf.yaml", R"(name: x
shell: sh
hosts:
  plain:
  py:
    shell: python3 {0}
stages:
  own:
    host: py
    shell: bash
    run: echo
  from_host:
    host: py
    run: print(1)
  from_workflow:
    host: plain
    run: echo
)");
  ASSERT_TRUE(wf.ok()) << wf.status().message();
  EXPECT_EQ(wf->shell_of(*wf->find_stage("own")), "bash");
  EXPECT_EQ(wf->shell_of(*wf->find_stage("from_host")), "python3 {0}");
  EXPECT_EQ(wf->shell_of(*wf->find_stage("from_workflow")), "sh");
  auto plain = parse_workflow("wf.yaml", "name: x\nstages:\n  a:\n    run: echo\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->shell_of(plain->stages[0]), "") << "no shell: the default";
}

}  // namespace
}  // namespace ferry::workflow
