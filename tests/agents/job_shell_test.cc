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
  EXPECT_EQ(c->argv, (std::vector<std::string>{"/usr/bin/bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                                               strict_bash_script("echo hi")}));
  const std::string text = strict_bash_script("echo hi");
  EXPECT_EQ(text.substr(text.size() - 7), "echo hi");
  EXPECT_EQ(text.find('\n'), std::string::npos) << "on the script's first line: its line numbers stay";
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

// Before -e ends the script, its log (stderr here) names the command as written and
// its line in the script; a pipe's statuses; inside a function too; nothing after
// the script's own `set +e`.
TEST(JobShellTest, StrictBashNamesTheFailingCommandAndItsLine) {
  const std::string bash = find_bash("/usr/bin:/bin");
  if (bash.empty()) GTEST_SKIP() << "no bash on this machine";
  struct Case {
    std::string script;
    int exit_code;
    std::string out, err, why;
  };
  const std::vector<Case> cases = {
      {"echo a\n\nSECRET=hidden\ntest -z \"$SECRET\"\necho b\n", 1, "a\n",
       "ferry: line 4: `test -z \"$SECRET\"` exited 1\n", "as written: no value expanded"},
      {"true\ncat /nonexistent/ferry 2>/dev/null | wc -c\n", 1, "0\n",
       "ferry: line 2: a pipe exited 1 (its commands: 1 0; the last: `wc -c`)\n", "a pipe's statuses"},
      {"g() {\n  false\n  echo not here\n}\ng\n", 1, "", "ferry: line 2: `false` exited 1\n",
       "the trap reaches into the function (-E)"},
      {"set +e\nfalse\necho on\n", 0, "on\n", "", "the script's own set +e: nothing to report"},
      {"set -x\nfalse\n", 1, "", "+ false\nferry: line 2: `false` exited 1\n",
       "set -x traces the script, not the trap"},
      {"echo a | cat\n[[ a == b ]]\n", 1, "a\n", "ferry: line 2: `[[ a == b ]]` exited 1\n",
       "[[ ]] leaves PIPESTATUS as the pipe before it left it: not a pipe"},
      {"exit 3\n", 3, "", "", "an exit is the script's word, not a failing command"},
      {"test -z " + std::string(300, 'x') + "\n", 1, "",
       "ferry: line 1: `test -z " + std::string(192, 'x') + "` exited 1\n", "200 characters of the command"},
  };
  for (const Case& c : cases) {
    auto command = shell_command("", c.script, bash);
    ASSERT_TRUE(command.ok());
    auto r = run_shell(*command);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.script;
    EXPECT_EQ(r.out, c.out) << c.script;
    EXPECT_EQ(r.err, c.err) << c.why;
  }
  // A script with an ERR trap of its own runs as it would without ferry: errtrace
  // would run that trap in functions, subshells and $( ) too.
  const std::string own =
      "trap 'echo mine >&2' ERR\nf() {\n  ( false )\n}\nv=$(false; echo fallback)\necho \"$v\"\nf\n";
  auto with_ferry = shell_command("", own, bash);
  ASSERT_TRUE(with_ferry.ok());
  auto ours = run_shell(*with_ferry);
  auto plain = testing::run_process({bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", own}, {}, 30);
  EXPECT_EQ(ours.exit_code, plain.exit_code);
  EXPECT_EQ(ours.out, plain.out);
  EXPECT_EQ(ours.err, plain.err);
  EXPECT_EQ(ours.out, "fallback\n");
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

// A Slurm batch script's lines: "$@" becomes the shell's words and the script, the
// shell chosen on the node; the script quoted whatever it holds.
TEST(JobShellTest, ShellChoiceLinesFallBackToShDashEOnANodeWithoutBash) {
  TempDir dir;
  const std::string log = dir.file("log");
  const std::string script = "echo 'it''s' \"$HOME\" $(x)";
  auto words = [&](const std::string& shell, const std::string& path) {
    std::string lines = shell_choice_lines(shell, script, "'" + log + "'") + "printf '%s|' \"$@\"";
    return testing::run_process({"/bin/sh", "-c", lines}, {{"PATH", path}}, 30).out;
  };
  const std::string as_bash = "bash|--noprofile|--norc|-eo|pipefail|-c|" + strict_bash_script(script) + "|";
  EXPECT_EQ(words("sh", "/usr/bin:/bin"), "/bin/sh|-c|" + script + "|");
  EXPECT_EQ(words("bash", "/usr/bin:/bin"), as_bash);
  if (!find_bash("/usr/bin:/bin").empty()) {
    EXPECT_EQ(words("", "/usr/bin:/bin"), as_bash);
  }
  EXPECT_FALSE(testing::exists(log));
  EXPECT_EQ(words("", dir.path()), "/bin/sh|-e|-c|" + script + "|");
  EXPECT_EQ(testing::read_text(log), "ferry: this host has no bash; the script runs with sh -e (no pipefail)\n");
}

// The batch script runs "$@": on a node with bash, a failing command is named as in a detached job.
TEST(JobShellTest, ShellChoiceLinesRunTheScriptWithTheTrap) {
  if (find_bash("/usr/bin:/bin").empty()) GTEST_SKIP() << "no bash on this machine";
  TempDir dir;
  const std::string lines =
      shell_choice_lines("", "echo one\nfalse\necho two\n", "'" + dir.file("log") + "'") + "\"$@\"";
  auto r = testing::run_process({"/bin/sh", "-c", lines}, {{"PATH", "/usr/bin:/bin"}}, 30);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "one\n");
  EXPECT_EQ(r.err, "ferry: line 2: `false` exited 1\n");
}

}  // namespace
}  // namespace ferry
