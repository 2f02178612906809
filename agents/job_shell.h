// How the agent runs a command stage's script with the stage's `shell:`
// (workflows/shell_choice.h): the choice made into an exec argument list for a
// detached job, or into lines of a Slurm batch script, which chooses on the node.
// A template shell ("python3 {0}") is turned into a plain `sh` command by
// job.start before either (the script goes to a file, its path in for {0}).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace ferry {

struct ShellCommand {
  std::vector<std::string> argv;  // exec'd as it is; argv[0] is a path
  std::string note;               // the log's first line, said before the script runs ("" = none)
};

/// `shell` is "" (the default), "bash" or "sh"; `bash` is bash's path on this host, "" when it has none.
Result<ShellCommand> shell_command(const std::string& shell, const std::string& script, const std::string& bash);

/// bash's path in `path` (a $PATH value), "" when none of its folders has one.
std::string find_bash(const std::string& path);

/// `script` as strict bash runs it: after the ERR trap that names a failing command
/// and its line in the log, on the script's first line (the line numbers stay the script's).
std::string strict_bash_script(const std::string& script);

/// Lines of sh that set "$@" to the command that runs `script`: the shell's words and
/// the script, bash chosen where the node has it; `log` is where the note of a
/// fallback goes (shell text, quoted).
std::string shell_choice_lines(const std::string& shell, const std::string& script, const std::string& log);

/// For a template shell: `tmpl` with every {0} made the quoted `script_path`.
std::string fill_shell_template(const std::string& tmpl, const std::string& script_path);

/// Whether `shell` is a template ("python3 {0}"), not a shell by name.
bool is_shell_template(const std::string& shell);

}  // namespace ferry
