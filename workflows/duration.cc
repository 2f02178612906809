#include "workflows/duration.h"

#include <cctype>
#include <cstdlib>

namespace ferry::workflow {

std::optional<double> parse_duration(const std::string& text) {
  if (text.empty()) return std::nullopt;
  double total = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == start) return std::nullopt;
    char* end = nullptr;
    std::string num = text.substr(start, i - start);
    double v = std::strtod(num.c_str(), &end);
    if (end != num.c_str() + num.size()) return std::nullopt;
    size_t ustart = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(ustart, i - ustart);
    double mult = 0;
    if (unit.empty() || unit == "s") mult = 1;
    else if (unit == "ms") mult = 0.001;
    else if (unit == "m") mult = 60;
    else if (unit == "h") mult = 3600;
    else return std::nullopt;
    if (unit.empty() && i != text.size()) return std::nullopt;
    total += v * mult;
    any = true;
  }
  if (!any) return std::nullopt;
  return total;
}

}  // namespace ferry::workflow
