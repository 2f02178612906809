// Reading JSON that another party wrote: a host's reply, an eval worker's result,
// a report stored from one. nlohmann::json's value() and get() throw on a field of
// another type, and it copies, compares and prints values recursively, so a deeply
// nested value overflows the stack of whoever touches it. These helpers read such
// JSON without either: the depth is checked on the text before parsing, and a
// field of the wrong type reads as its fallback. Pure functions, any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/json_depth.h"
#include "base/status.h"

namespace ferry {

/// Deep enough for every report ferry writes (they nest 5 or 6 levels).
inline constexpr int kMaxPeerJsonDepth = 128;

/// Parses `text`, refusing bad JSON and more than `max_depth` levels of nesting;
/// errors (kInvalidArgument) name `what`.
Result<nlohmann::json> parse_peer_json(const std::string& text, const std::string& what,
                                       int max_depth = kMaxPeerJsonDepth);

/// The field `key` of `j` when `j` is an object holding it with that type, else
/// `fallback`. int_field takes integers only (not 1.5, not a string).
std::string str_field(const nlohmann::json& j, const char* key, const std::string& fallback = "");
double num_field(const nlohmann::json& j, const char* key, double fallback = 0);
int64_t int_field(const nlohmann::json& j, const char* key, int64_t fallback = 0);
bool bool_field(const nlohmann::json& j, const char* key, bool fallback = false);
/// The field whatever its type, null when `j` is not an object or lacks it.
const nlohmann::json& any_field(const nlohmann::json& j, const char* key);
/// The field when it is an object (an array), else an empty one.
const nlohmann::json& obj_field(const nlohmann::json& j, const char* key);
const nlohmann::json& arr_field(const nlohmann::json& j, const char* key);

/// "a string", "an array", ...: for messages that name what a field held instead.
std::string json_type_phrase(const nlohmann::json& j);

}  // namespace ferry
