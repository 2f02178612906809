// Where a template sits in a shell command (review F7). ferry puts every value
// into `run` as one single-quoted word, which is safe where a word may stand and
// nowhere else: inside "…" the quotes are literal and $(…) still runs, inside '…'
// the value's own quote closes it, and an unquoted here-document expands $(…).
// This scans `run` as POSIX sh would quote it, to refuse those places at validate.
// Pure functions; any thread.
#pragma once

#include <string>
#include <vector>

namespace ferry::workflow {

struct UnsafeTemplate {
  size_t offset = 0;  // of the "${{" in the command
  std::string where;  // "double quotes", "single quotes", "a here-document"
};

/// Every `${{ … }}` of `command` that stands inside quotes or an expanding
/// here-document (`<<EOF`; a quoted delimiter `<<'EOF'` does not expand).
std::vector<UnsafeTemplate> unsafe_templates(const std::string& command);

}  // namespace ferry::workflow
