// Where a template sits in a shell command (review F7). ferry puts every value
// into `run` as one single-quoted word, which is safe where a word may stand and
// nowhere else: inside "…" the quotes are literal and $(…) still runs, inside '…'
// the value's own quote closes it, and an unquoted here-document expands $(…).
// Inside `…` the value's own backquote ends the substitution (bash --posix runs
// what follows), and in a # comment the value's newline ends the comment.
// Inside arithmetic ($(( )), (( )), [[ ]], let and declare -i arguments, ${…}
// offsets and subscripts, a[…]= subscripts) the shell drops the quotes and bash
// evaluates a value's own a[$(cmd)], as it does where it reads a variable's name
// (unset, read, printf -v, test -v, declare NAME=); a `\` or `$` right before ${{ turns the
// rendered quote into text or into bash's $'…'. ${{ int(…) }} renders only digits
// (template.h) and is safe everywhere.
// This scans `run` as sh and bash nest it (quotes, $( ), $(( )), ${ }, backquotes,
// [[ ]], (( )) at a command's start, here-documents, comments) to refuse those
// places at validate. Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

namespace ferry::workflow {

struct UnsafeTemplate {
  size_t offset = 0;  // of the "${{" in the command
  /// "double quotes", "single quotes", "$'…' quotes", "backquotes", "a here-document",
  /// "a comment", "arithmetic", "[[ ]]", "the arguments of let or declare -i",
  /// "a ${…} expansion", "an array subscript", "a variable name (…)", "after a backslash", "after a $"
  std::string where;
};

/// Every `${{ … }}` of `command` (but `${{ int(…) }}`) that stands where a
/// single-quoted word is not one literal word: see above. A quoted here-document
/// delimiter (`<<'EOF'`) does not expand, so its body is safe.
std::vector<UnsafeTemplate> unsafe_templates(const std::string& command);

}  // namespace ferry::workflow
