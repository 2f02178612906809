// Durations in workflow files: "90", "90s", "500ms", "5m", "2h", "1h30m".
#pragma once

#include <optional>
#include <string>

namespace ferry::workflow {

/// Seconds, or nullopt when `text` is not a duration.
std::optional<double> parse_duration(const std::string& text);

}  // namespace ferry::workflow
