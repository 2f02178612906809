// Where a template sits in a shell command (review F7). ferry puts every value
// into `run` as one single-quoted word, which is safe where a word may stand and
// nowhere else: inside "…" the quotes are literal and $(…) still runs, inside '…'
// the value's own quote closes it, and an unquoted here-document expands $(…).
// Inside `…` the value's own backquote ends the substitution (bash --posix runs
// what follows), and in a # comment the value's newline ends the comment.
// This scans `run` as POSIX sh would quote it, to refuse those places at validate.
// Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

namespace ferry::workflow {

struct UnsafeTemplate {
  size_t offset = 0;  // of the "${{" in the command
  std::string where;  // "double quotes", "single quotes", "backquotes", "a here-document", "a comment"
};

/// Every `${{ … }}` of `command` that stands inside quotes, backquotes, a comment
/// or an expanding here-document (`<<EOF`; a quoted delimiter `<<'EOF'` does not expand).
std::vector<UnsafeTemplate> unsafe_templates(const std::string& command);

}  // namespace ferry::workflow
