// job_shell: a stage's `shell:` made into the command the agent execs (issue 41,
// newcomer report U1): strict bash by default, sh -e with a note where the job's
// PATH has no bash, /bin/sh -c for `shell: sh`, and a template's {0} filled with
// the script's path as one shell word. Commands run here with the real /bin/sh.
#include "agents/job_shell.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::TempDir;
using testing::write_text;

// The argument list of a detached job as it is exec'd, run here: its exit code and output.
testing::ProcessResult run_shell(const ShellCommand& c) { return testing::run_process(c.argv, {}, 30); }

TEST(JobShellTest, TheDefaultIsStrictBashWithoutProfileOrRc) {
  auto c = shell_command("", "echo hi", "/usr/bin/bash");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->argv,
            (std::vector<std::string>{"/usr/bin/bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", "echo hi"}));
  EXPECT_EQ(c->note, "");
  auto named = shell_command("bash", "echo hi", "/usr/bin/bash");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->argv, c->argv);
}

TEST(JobShellTest, WithoutBashTheDefaultIsShDashEAndSaysSo) {
  auto c = shell_command("", "echo hi", "");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->argv, (std::vector<std::string>{"/bin/sh", "-e", "-c", "echo hi"}));
  EXPECT_EQ(c->note, "ferry: this host has no bash; the script runs with sh -e (no pipefail)");
}

TEST(JobShellTest, ShellBashWithoutBashIsRefusedNamingBash) {
  auto c = shell_command("bash", "echo hi", "");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(c.status().message().find("no bash"), std::string::npos) << c.status().message();
}

TEST(JobShellTest, ShellShIsPlainShDashC) {
  auto c = shell_command("sh", "false; echo after", "/usr/bin/bash");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->argv, (std::vector<std::string>{"/bin/sh", "-c", "false; echo after"}));
  EXPECT_EQ(c->note, "");
  auto r = run_shell(*c);
  EXPECT_EQ(r.exit_code, 0) << "only the last status counts";
  EXPECT_EQ(r.out, "after\n");
}

TEST(JobShellTest, AnotherShellByNameIsRefused) {
  auto c = shell_command("zsh", "echo hi", "/usr/bin/bash");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("zsh"), std::string::npos);
}

// The commands as exec'd: the first failing command, or part of a pipe, ends the script.
TEST(JobShellTest, StrictBashStopsAtAFailingCommandAndAFailingPipe) {
  const std::string bash = find_bash("/usr/bin:/bin");
  if (bash.empty()) GTEST_SKIP() << "no bash on this machine";
  auto mid = shell_command("", "echo X; false; echo after", bash);
  ASSERT_TRUE(mid.ok());
  auto r = run_shell(*mid);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "X\n");
  auto pipe = shell_command("", "false | cat", bash);
  ASSERT_TRUE(pipe.ok());
  EXPECT_NE(run_shell(*pipe).exit_code, 0);
  auto fallback = shell_command("", "echo X; false; echo after", "");
  ASSERT_TRUE(fallback.ok());
  auto f = run_shell(*fallback);
  EXPECT_NE(f.exit_code, 0);
  EXPECT_EQ(f.out, "X\n");
}

TEST(JobShellTest, FindBashTakesTheFirstExecutableBashOfAbsoluteFolders) {
  TempDir none, plain, first, second;
  write_text(plain.file("bash"), "#!/bin/sh\n");  // not executable
  ::chmod(plain.file("bash").c_str(), 0644);
  for (const TempDir* d : {&first, &second}) {
    write_text(d->file("bash"), "#!/bin/sh\n");
    ::chmod(d->file("bash").c_str(), 0755);
  }
  EXPECT_EQ(find_bash(none.path() + ":" + plain.path() + "::" + first.path() + ":" + second.path()),
            first.file("bash"));
  EXPECT_EQ(find_bash(none.path() + ":" + plain.path()), "");
  EXPECT_EQ(find_bash(""), "");
  // A relative folder is not looked in: what it means depends on the job's cwd.
  EXPECT_EQ(find_bash("."), "");
}

TEST(JobShellTest, ATemplatesPathIsOneShellWordWhateverItHolds) {
  const std::string path = "/tmp/it's a \"dir\" $(touch pwned)/script";
  EXPECT_EQ(fill_shell_template("python3 {0}", "/tmp/x/script"), "python3 '/tmp/x/script'");
  const std::string filled = fill_shell_template("printf '%s|' {0} {0}", path);
  auto r = testing::run_process({"/bin/sh", "-c", filled}, {}, 30);
  EXPECT_EQ(r.exit_code, 0) << filled;
  EXPECT_EQ(r.out, path + "|" + path + "|") << filled;
  EXPECT_TRUE(is_shell_template("bash -x {0}"));
  EXPECT_FALSE(is_shell_template("bash"));
  EXPECT_FALSE(is_shell_template("sh"));
}

// A Slurm batch script's lines: "$@" becomes the shell's words, chosen on the node.
TEST(JobShellTest, ShellChoiceLinesFallBackToShDashEOnANodeWithoutBash) {
  TempDir dir;
  const std::string log = dir.file("log");
  auto words = [&](const std::string& shell, const std::string& path) {
    std::string script = shell_choice_lines(shell, "'" + log + "'") + "printf '%s ' \"$@\"";
    return testing::run_process({"/bin/sh", "-c", script}, {{"PATH", path}}, 30).out;
  };
  EXPECT_EQ(words("sh", "/usr/bin:/bin"), "/bin/sh -c ");
  EXPECT_EQ(words("bash", "/usr/bin:/bin"), "bash --noprofile --norc -eo pipefail -c ");
  if (!find_bash("/usr/bin:/bin").empty()) {
    EXPECT_EQ(words("", "/usr/bin:/bin"), "bash --noprofile --norc -eo pipefail -c ");
  }
  EXPECT_FALSE(testing::exists(log));
  EXPECT_EQ(words("", dir.path()), "/bin/sh -e -c ");
  EXPECT_EQ(testing::read_text(log), "ferry: this host has no bash; the script runs with sh -e (no pipefail)\n");
}

}  // namespace
}  // namespace ferry
