// A duration as people read it in a status line: "4.2s", "3m7s", "1h30m". Pure, any thread.
#pragma once

#include <cstdint>
#include <string>

namespace ferry {

/// `ms` milliseconds: tenths of a second under a minute, minutes and seconds under an
/// hour, then hours and minutes; "-" when negative (not known).
std::string duration_text(int64_t ms);

}  // namespace ferry
