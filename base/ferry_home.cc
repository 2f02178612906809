#include "base/ferry_home.h"

#include <cstdlib>

namespace ferry {

std::string ferry_home_dir() {
  const char* home = std::getenv("FERRY_HOME");
  if (home && *home) return home;
  const char* user_home = std::getenv("HOME");
  if (!user_home || !*user_home) return "";
  return std::string(user_home) + "/.local/share/ferry";
}

}  // namespace ferry
