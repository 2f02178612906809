#include "base/duration_text.h"

#include <iomanip>
#include <sstream>

namespace ferry {

std::string duration_text(int64_t ms) {
  if (ms < 0) return "-";
  std::ostringstream s;
  if (ms < 60000) s << std::fixed << std::setprecision(1) << ms / 1000.0 << "s";
  else if (ms < 3600000) s << ms / 60000 << "m" << (ms / 1000) % 60 << "s";
  else s << ms / 3600000 << "h" << (ms / 60000) % 60 << "m";
  return s.str();
}

}  // namespace ferry
