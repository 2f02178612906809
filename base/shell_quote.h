// shell_quote: make any string one literal word for a POSIX shell.
//
// Every value that reaches a remote command line (paths, template values) goes
// through this: the remote side of an exec channel is `sh -c` (the coordinator's
// libssh channels, a direct copy's ssh client). Pure function.
#pragma once

#include <string>

namespace ferry {

/// 'it'\''s' style quoting: the result is a single word whatever the input holds.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

}  // namespace ferry
