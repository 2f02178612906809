#include "agents/job_shell.h"

#include <unistd.h>

#include "base/shell_quote.h"

namespace ferry {
namespace {

const char* const kFallbackNote = "ferry: this host has no bash; the script runs with sh -e (no pipefail)";

std::vector<std::string> strict_bash(const std::string& bash) {
  // No profile or rc file: the script sees the job's env, not the login's.
  return {bash, "--noprofile", "--norc", "-eo", "pipefail", "-c"};
}

}  // namespace

Result<ShellCommand> shell_command(const std::string& shell, const std::string& script, const std::string& bash) {
  ShellCommand c;
  if (shell == "sh") {
    c.argv = {"/bin/sh", "-c"};
  } else if (shell.empty() || shell == "bash") {
    if (!bash.empty()) {
      c.argv = strict_bash(bash);
    } else if (shell.empty()) {
      c.argv = {"/bin/sh", "-e", "-c"};
      c.note = kFallbackNote;
    } else {
      return failed_precondition("the stage's shell is bash, and this host has no bash on its PATH");
    }
  } else {
    return invalid_argument("shell '" + shell + "' is not bash or sh");
  }
  c.argv.push_back(script);
  return c;
}

std::string find_bash(const std::string& path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (!dir.empty() && dir[0] == '/') {
      std::string candidate = dir + "/bash";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return "";
}

std::string shell_choice_lines(const std::string& shell, const std::string& log) {
  if (shell == "sh") return "set -- /bin/sh -c\n";
  if (shell == "bash") return "set -- bash --noprofile --norc -eo pipefail -c\n";
  return "if command -v bash >/dev/null 2>&1; then set -- bash --noprofile --norc -eo pipefail -c\n"
         "else echo " +
         shell_quote(kFallbackNote) + " >>" + log + "; set -- /bin/sh -e -c; fi\n";
}

std::string fill_shell_template(const std::string& tmpl, const std::string& script_path) {
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = tmpl.find("{0}", at)) != std::string::npos; at = hit + 3) {
    out += tmpl.substr(at, hit - at) + shell_quote(script_path);
  }
  return out + tmpl.substr(at);
}

bool is_shell_template(const std::string& shell) { return shell.find("{0}") != std::string::npos; }

}  // namespace ferry
