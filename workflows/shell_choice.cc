#include "workflows/shell_choice.h"

namespace ferry::workflow {

std::string shell_problem(const std::string& value) {
  if (value == "bash" || value == "sh") return "";
  if (value.find("{0}") != std::string::npos) return "";
  return "'" + value +
         "' is not a shell ferry knows: write bash (strict: -eo pipefail), sh (/bin/sh, only the last command's "
         "status counts), or a command with {0} where the script's path goes, such as 'python3 {0}'";
}

}  // namespace ferry::workflow
