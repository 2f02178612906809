// split: a string cut at every separator, as the workflow's small grammars read
// their lists ("gpu:a100:2", "params.x"). Pure function.
#pragma once

#include <string>
#include <vector>

namespace ferry {

/// "a:b::c" on ':' -> {"a", "b", "", "c"}: empty items are kept, so "" is {""}.
inline std::vector<std::string> split(const std::string& s, char separator) {
  std::vector<std::string> parts;
  size_t pos = 0;
  for (;;) {
    size_t end = s.find(separator, pos);
    parts.push_back(s.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) return parts;
    pos = end + 1;
  }
}

}  // namespace ferry
