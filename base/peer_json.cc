#include "base/peer_json.h"

#include <algorithm>
#include <limits>

namespace ferry {
namespace {

const nlohmann::json* find_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

}  // namespace

Result<nlohmann::json> parse_peer_json(const std::string& text, const std::string& what, int max_depth) {
  if (json_nesting_depth(text) > max_depth) {
    return invalid_argument(what + " nests arrays or objects deeper than " + std::to_string(max_depth) + " levels");
  }
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument(what + " is not JSON");
  return j;
}

std::string str_field(const nlohmann::json& j, const char* key, const std::string& fallback) {
  const auto* f = find_field(j, key);
  return f && f->is_string() ? f->get<std::string>() : fallback;
}

double num_field(const nlohmann::json& j, const char* key, double fallback) {
  const auto* f = find_field(j, key);
  return f && f->is_number() ? f->get<double>() : fallback;
}

int64_t int_field(const nlohmann::json& j, const char* key, int64_t fallback) {
  const auto* f = find_field(j, key);
  if (!f) return fallback;
  if (f->is_number_unsigned()) {
    auto u = f->get<uint64_t>();
    return u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? static_cast<int64_t>(u) : fallback;
  }
  return f->is_number_integer() ? f->get<int64_t>() : fallback;
}

bool bool_field(const nlohmann::json& j, const char* key, bool fallback) {
  const auto* f = find_field(j, key);
  return f && f->is_boolean() ? f->get<bool>() : fallback;
}

const nlohmann::json& any_field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  const auto* f = find_field(j, key);
  return f ? *f : kNull;
}

const nlohmann::json& obj_field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const auto* f = find_field(j, key);
  return f && f->is_object() ? *f : kEmpty;
}

const nlohmann::json& arr_field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  const auto* f = find_field(j, key);
  return f && f->is_array() ? *f : kEmpty;
}

std::string json_type_phrase(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "nothing readable";
  }
}

}  // namespace ferry
