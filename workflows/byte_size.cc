#include "workflows/byte_size.h"

#include <cctype>
#include <cstdlib>

namespace ferry::workflow {

std::optional<int64_t> parse_byte_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  std::string num = text.substr(0, i);
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size()) return std::nullopt;
  std::string unit = text.substr(i);
  if (unit.size() == 3 && unit.substr(1) == "iB") unit = unit.substr(0, 1);  // MiB
  if (unit.size() == 2 && unit[1] == 'B') unit = unit.substr(0, 1);           // MB
  double mult;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "k") mult = 1024.0;
  else if (unit == "M") mult = 1024.0 * 1024;
  else if (unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  else return std::nullopt;
  double bytes = v * mult;
  if (bytes > static_cast<double>(int64_t{1} << 62)) return std::nullopt;
  return static_cast<int64_t>(bytes);
}

}  // namespace ferry::workflow
