#include "base/login_shell_command.h"

namespace ferry {

Result<std::string> login_shell_command(const std::string& posix_text) {
  if (posix_text.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    return invalid_argument("remote command `" + posix_text.substr(0, 200) +
                            "` holds a line break or a NUL, which no form passes alike through sh, csh and fish "
                            "login shells (a path or value in it, such as a workdir, must be one line)");
  }
  std::string word;
  bool quoted = false;
  for (char c : posix_text) {
    const bool special = c == '\'' || c == '\\' || c == '!';
    if (special == quoted) {
      word += '\'';
      quoted = !quoted;
    }
    if (special) word += '\\';
    word += c;
  }
  if (quoted) word += '\'';
  if (word.empty()) word = "''";
  return "exec /bin/sh -c " + word;
}

}  // namespace ferry
