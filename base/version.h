// ferry's version: `ferry --version`, and what each agent reports in `hello`
// (the coordinator and its agents are built and released together).
#pragma once

namespace ferry {

inline constexpr const char* kFerryVersion = "0.1.0";

}  // namespace ferry
