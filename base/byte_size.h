// A size as people read it in a status line or a report: "812 B", "3.4 KiB",
// "1.2 MiB", "17.03 GiB". Pure, any thread.
#pragma once

#include <string>

namespace ferry {

/// `bytes` in the largest binary unit under which it is at least 1 (B, KiB, MiB, GiB).
std::string byte_size(double bytes);

/// "0.4/1.2 KiB": a part and its whole, both in the whole's unit (the part's own
/// unit would make "812 B/1.2 MiB" harder to compare at a glance).
std::string byte_size_of(double part, double whole);

}  // namespace ferry
