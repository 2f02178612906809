#include "agents/job_shell.h"

#include <unistd.h>

#include <cctype>
#include <iterator>

#include "base/shell_quote.h"

namespace ferry {
namespace {

const char* const kFallbackNote = "ferry: this host has no bash; the script runs with sh -e (no pipefail)";

// Strict bash: no profile or rc file, so the script sees the job's env, not the
// login's; -e and pipefail.
constexpr const char* kStrictBashWords[] = {"--noprofile", "--norc", "-eo", "pipefail", "-c"};

// Before -e ends the script, the log names the command and its line, so a failure
// shows its cause ("`test -f input.txt` exited 1", where `test` says nothing). It
// goes before the script on its first line, so $LINENO counts the script's own
// lines. Silent once the script says `set +e`. $BASH_COMMAND is the command as
// written (what `eval` runs, as it runs it). A pipe is named as one only where it
// is one and a part of it failed: `[[ ]]` and `(( ))` leave PIPESTATUS as it was.
// Its own commands write to the log through fd 3, with stderr closed to `set -x`.
const char* const kErrTrap =
    R"(trap '{ __ferry_s=$? __ferry_p="${PIPESTATUS[*]}"; case $- in *e*) )"
    R"(if [ "${__ferry_p#* }" != "$__ferry_p" ] && [ -n "${__ferry_p//[0 ]/}" ]; then )"
    R"(printf "ferry: line %s: a pipe exited %s (its commands: %s; the last: \`%s\`)\n" )"
    R"("$LINENO" "$__ferry_s" "$__ferry_p" "${BASH_COMMAND:0:200}" >&3; )"
    R"(else printf "ferry: line %s: \`%s\` exited %s\n" "$LINENO" "${BASH_COMMAND:0:200}" "$__ferry_s" >&3; )"
    R"(fi;; esac; } 3>&2 2>/dev/null' ERR; )";

// errtrace carries the trap into functions, subshells and $( ), but it would run a
// trap of the script's own there too, more often than the script expects: a
// script that names ERR runs without it.
const char* const kErrTrace = "set -E; ";

bool names_err(const std::string& script) {
  auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = script.find("ERR"); at != std::string::npos; at = script.find("ERR", at + 1)) {
    if ((at == 0 || !word_char(script[at - 1])) && (at + 3 == script.size() || !word_char(script[at + 3]))) return true;
  }
  return false;
}

// What goes before `script` on its first line.
std::string strict_bash_prefix(const std::string& script) {
  return kErrTrap + std::string(names_err(script) ? "" : kErrTrace);
}

// kStrictBashWords as one line of sh.
std::string strict_bash_line() {
  std::string s;
  for (const char* w : kStrictBashWords) s += std::string(" ") + w;
  return s;
}

}  // namespace

std::string strict_bash_script(const std::string& script) { return strict_bash_prefix(script) + script; }

Result<ShellCommand> shell_command(const std::string& shell, const std::string& script, const std::string& bash) {
  ShellCommand c;
  std::string text = script;
  if (shell == "sh") {
    c.argv = {"/bin/sh", "-c"};
  } else if (shell.empty() || shell == "bash") {
    if (!bash.empty()) {
      c.argv = {bash};
      c.argv.insert(c.argv.end(), std::begin(kStrictBashWords), std::end(kStrictBashWords));
      text = strict_bash_script(script);
    } else if (shell.empty()) {
      c.argv = {"/bin/sh", "-e", "-c"};
      c.note = kFallbackNote;
    } else {
      return failed_precondition("the stage's shell is bash, and this host has no bash on its PATH");
    }
  } else {
    return invalid_argument("shell '" + shell + "' is not bash or sh");
  }
  c.argv.push_back(text);
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

std::string shell_choice_lines(const std::string& shell, const std::string& script, const std::string& log) {
  // The script once, in a variable: it may be large, and two of the three choices need it.
  const std::string script_line = "__ferry_script=" + shell_quote(script) + "\n";
  const std::string as_bash =
      "set -- bash" + strict_bash_line() + " " + shell_quote(strict_bash_prefix(script)) + "\"$__ferry_script\"";
  if (shell == "sh") return script_line + "set -- /bin/sh -c \"$__ferry_script\"\n";
  if (shell == "bash") return script_line + as_bash + "\n";
  return script_line + "if command -v bash >/dev/null 2>&1; then " + as_bash + "\nelse echo " +
         shell_quote(kFallbackNote) + " >>" + log + "; set -- /bin/sh -e -c \"$__ferry_script\"; fi\n";
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
