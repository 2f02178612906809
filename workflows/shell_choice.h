// `shell:` (workflow, host or stage): how a command stage's `run:` script runs.
//   (absent)  bash -eo pipefail where the host has bash, else sh -e: a failing
//             command, or a failing part of a pipe, fails the stage (under bash
//             the log names it and its line)
//   bash      the same, and the stage fails where the host has no bash
//   sh        /bin/sh -c SCRIPT: only the last command's status counts
//   TEMPLATE  any other value with {0}: the script is written to a file and the
//             template runs with {0} as its path ("python3 {0}", "bash -x {0}"),
//             as GitHub Actions' `shell:` does
// The agent turns the choice into a command line (agents/job_shell.h).
#pragma once

#include <string>

namespace ferry::workflow {

/// "" when `value` is a shell ferry can run with, else why not (for a file:line:col error).
std::string shell_problem(const std::string& value);

}  // namespace ferry::workflow
