// JsonFieldWriter: the writing side of a field list (jobs/eval/run/report_fields.h, eval_spec.cc):
// each field visited goes into a JSON object under its key, as nlohmann writes its
// type; an empty optional, a null JSON value and an empty `nonempty` string are left
// out. JsonFields (json_fields.h) is the reading side
// of the same lists, so each key is written in one place. Header-only; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "base/json_fields.h"

namespace ferry {

class JsonFieldWriter {
 public:
  static constexpr bool kReads = false;

  explicit JsonFieldWriter(nlohmann::json* j) : j_(*j) {}

  template <typename T>
  void operator()(const char* key, const T& value) {
    j_[key] = value;
  }
  template <typename T>
  void operator()(const char* key, const std::optional<T>& value) {
    if (value) j_[key] = *value;
  }
  void operator()(const char* key, const nlohmann::json& value) {
    if (!value.is_null()) j_[key] = value;
  }
  /// Indices as the names of an object ({"0": ..., "7": ...}), as JSON names must be strings.
  void operator()(const char* key, const std::map<int64_t, std::string>& value) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [i, v] : value) o[std::to_string(i)] = v;
    j_[key] = std::move(o);
  }
  template <typename T>
  void operator()(const char* key, const T& value, Required) {
    (*this)(key, value);
  }
  template <typename E, size_t N>
  void named(const char* key, E value, const EnumName<E> (&table)[N]) {
    j_[key] = enum_name(table, value);
  }
  template <typename E, size_t N>
  void named(const char* key, E value, const EnumName<E> (&table)[N], Required) {
    named(key, value, table);
  }
  void nonempty(const char* key, const std::string& value) {
    if (!value.empty()) j_[key] = value;
  }
  /// `fn(writer)` fills the object under `key`.
  template <typename Fn>
  void object(const char* key, Fn fn) {
    j_[key] = to_json(fn);
  }
  /// `value`, through its field list `fields(writer, value)`, under `key`.
  template <typename T, typename Fields>
  void object(const char* key, const T& value, Fields fields) {
    j_[key] = to_json([&](JsonFieldWriter& w) { fields(w, value); });
  }
  template <typename T, typename Fields>
  void object(const char* key, const std::optional<T>& value, Fields fields) {
    if (value) object(key, *value, fields);
  }
  /// An array of objects, each through `fields`.
  template <typename T, typename Fields>
  void objects(const char* key, const std::vector<T>& items, Fields fields) {
    nlohmann::json a = nlohmann::json::array();
    for (const T& x : items) a.push_back(to_json([&](JsonFieldWriter& w) { fields(w, x); }));
    j_[key] = std::move(a);
  }
  template <typename T, typename Fields>
  void objects(const char* key, const std::vector<T>& items, Fields fields, Required) {
    objects(key, items, fields);
  }

  /// The object `fn(writer)` writes.
  template <typename Fn>
  static nlohmann::json to_json(Fn fn) {
    nlohmann::json j = nlohmann::json::object();
    JsonFieldWriter w(&j);
    fn(w);
    return j;
  }

 private:
  nlohmann::json& j_;
};

/// `x` as the JSON object its field list writes.
template <typename T, typename Fields>
nlohmann::json fields_json(const T& x, Fields fields) {
  return JsonFieldWriter::to_json([&](JsonFieldWriter& w) { fields(w, x); });
}

/// Whether a field list is being read (JsonFields) or written (JsonFieldWriter): for
/// the fields one side handles differently (derived on reading, computed on writing).
template <typename Visitor>
inline constexpr bool kReads = std::decay_t<Visitor>::kReads;

}  // namespace ferry
