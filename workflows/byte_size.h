// Sizes in workflow files: "1048576", "512K", "100M", "2G", "1T" (binary units:
// K = 1024; "MiB" and "MB" read the same as "M").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ferry::workflow {

/// Bytes, or nullopt when `text` is not a size (or one past 2^62).
std::optional<int64_t> parse_byte_size(const std::string& text);

}  // namespace ferry::workflow
