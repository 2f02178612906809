#include "base/json_depth.h"

#include <algorithm>

namespace ferry {

int json_nesting_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

Status check_json_depth(std::string_view text, const std::string& where, int max_depth) {
  if (json_nesting_depth(text) <= max_depth) return Status();
  return invalid_argument(where + ": nested deeper than " + std::to_string(max_depth) + " levels");
}

}  // namespace ferry
