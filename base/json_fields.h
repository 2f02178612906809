// JsonFields: the fields of a JSON object another party wrote, read into typed places
// (a report from a host, a spec through the plugin's C boundary). The first field of
// a wrong type, or an array past kMaxJsonItems, is remembered with its path
// ("candidate.response_taus[3] is a string, not a number") and later reads do
// nothing; absent and null fields leave their places as they were. Through
// operator() and the object overloads it reads a field list (jobs/eval/run/report_fields.h),
// whose writing side is JsonFieldWriter; fields_from_json reads a whole object through one,
// exact_fields_from_json also refuses a field the list does not name (a message ferry
// writes to itself: the agent protocol, protocol/ops/). Header-only; any thread.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "base/peer_json.h"
#include "base/status.h"

namespace ferry {

/// Entries of any one array read (responses, ids, taus...).
inline constexpr size_t kMaxJsonItems = size_t{1} << 22;

/// A field list's mark for a field that must be present: `v("job", x.job, kRequired)`.
struct Required {};
inline constexpr Required kRequired{};

class JsonFields {
 public:
  static constexpr bool kReads = true;

  /// `exact`: a field no read asks for is an error too (refuse_unread, after the list).
  JsonFields(const nlohmann::json& j, std::string path, std::string* error, bool exact = false)
      : j_(j),
        path_(std::move(path)),
        error_(error),
        exact_(exact) {}

  void str(const char* key, std::string* out) {
    if (const nlohmann::json* v = field(key, "a string", [](const nlohmann::json& x) { return x.is_string(); })) {
      *out = v->get<std::string>();
    }
  }
  void num(const char* key, double* out) {
    if (const nlohmann::json* v = field(key, "a number", [](const nlohmann::json& x) { return x.is_number(); }))
      *out = v->get<double>();
  }
  void optional_num(const char* key, std::optional<double>* out) {
    if (const nlohmann::json* v = field(key, "a number", [](const nlohmann::json& x) { return x.is_number(); }))
      *out = v->get<double>();
  }
  /// An integer that `Int` holds: a larger one is refused, not narrowed (a mode of
  /// 2^32 + 0644 must not read as 0644).
  template <typename Int>
  void integer(const char* key, Int* out) {
    const nlohmann::json* v = field(key, "an integer", [](const nlohmann::json& x) { return x.is_number_integer(); });
    if (v == nullptr) return;
    if (!fits<Int>(*v)) {
      if (error_->empty()) *error_ = join(key) + " is " + v->dump() + ", out of range";
      return;
    }
    *out = v->is_number_unsigned() ? static_cast<Int>(v->get<uint64_t>()) : static_cast<Int>(v->get<int64_t>());
  }
  void boolean(const char* key, bool* out) {
    if (const nlohmann::json* v = field(key, "true or false", [](const nlohmann::json& x) { return x.is_boolean(); })) {
      *out = v->get<bool>();
    }
  }
  void optional_boolean(const char* key, std::optional<bool>* out) {
    if (const nlohmann::json* v = field(key, "true or false", [](const nlohmann::json& x) { return x.is_boolean(); })) {
      *out = v->get<bool>();
    }
  }
  template <typename Item>
  void list(const char* key, std::vector<Item>* out) {
    each(key, [&](const nlohmann::json& x, const std::string& at) {
      if (!item_ok<Item>(x, at)) return;
      out->push_back(x.template get<Item>());
    });
  }
  /// `fn(reader)` for the object under `key`, when present.
  template <typename Fn>
  void object(const char* key, Fn fn) {
    if (const nlohmann::json* v = field(key, "an object", [](const nlohmann::json& x) { return x.is_object(); })) {
      JsonFields r(*v, join(key), error_, exact_);
      fn(r);
      if (exact_) r.refuse_unread();
    }
  }
  /// `fn(reader)` for each object of the array under `key`.
  template <typename Fn>
  void objects(const char* key, Fn fn) {
    each(key, [&](const nlohmann::json& x, const std::string& at) {
      if (!x.is_object()) return fail(at, x, "an object");
      JsonFields r(x, at, error_, exact_);
      fn(r);
      if (exact_) r.refuse_unread();
    });
  }
  /// The names of a string → string object (a job's env), each value a string.
  void str_map(const char* key, std::map<std::string, std::string>* out) {
    const nlohmann::json* v = field(key, "an object", [](const nlohmann::json& x) { return x.is_object(); });
    if (v == nullptr || too_many(key, *v)) return;
    for (auto it = v->begin(); it != v->end() && !failed(); ++it) {
      if (!it->is_string()) return fail(join(key) + "." + it.key(), *it, "a string");
      (*out)[it.key()] = it->get<std::string>();
    }
  }
  /// An object kept whole, as JSON (options passed on to a tool: a Slurm host's sbatch options).
  void json_object(const char* key, nlohmann::json* out) {
    if (const nlohmann::json* v = field(key, "an object", [](const nlohmann::json& x) { return x.is_object(); })) {
      *out = *v;
    }
  }
  /// A name from `table` (base/enum_names.h); another is refused with the names it may be.
  template <typename E, size_t N>
  void named(const char* key, E& out, const EnumName<E> (&table)[N]) {
    std::string name;
    str(key, &name);
    if (name.empty() && !present(key)) return;
    if (auto value = enum_from_name(table, name)) {
      out = *value;
    } else if (!failed()) {
      *error_ = join(key) + " is '" + name + "', not one of " + enum_names(table);
    }
  }
  /// The same, and absent (or null) it is named as missing.
  template <typename E, size_t N>
  void named(const char* key, E& out, const EnumName<E> (&table)[N], Required) {
    if (!missing(key)) named(key, out, table);
  }
  /// An index → string object (a file's chunk hashes), each name a decimal index.
  void index_map(const char* key, std::map<int64_t, std::string>* out) {
    const nlohmann::json* v = field(key, "an object", [](const nlohmann::json& x) { return x.is_object(); });
    if (v == nullptr || too_many(key, *v)) return;
    for (auto it = v->begin(); it != v->end() && !failed(); ++it) {
      const std::string& k = it.key();
      if (k.empty() || k.size() > 15 || k.find_first_not_of("0123456789") != std::string::npos) {
        *error_ = join(key) + " names '" + k.substr(0, 40) + "', not an index";
        return;
      }
      if (!it->is_string()) return fail(join(key) + "." + k, *it, "a string");
      (*out)[std::stoll(k)] = it->get<std::string>();
    }
  }
  /// A string the writing side leaves out when empty; read as any string.
  void nonempty(const char* key, std::string& out) { str(key, &out); }
  bool failed() const { return !error_->empty(); }

  /// Refuses the first field of this object that no read asked for, by its path, and
  /// any in `also` (what the caller reads itself: a request's "op").
  void refuse_unread(std::initializer_list<const char*> also = {}) {
    if (failed() || !j_.is_object()) return;
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (was_read(it.key()) ||
          std::find_if(also.begin(), also.end(), [&](const char* k) { return it.key() == k; }) != also.end())
        continue;
      *error_ = join(it.key()) + " is not a known field";
      return;
    }
  }

  // A field list's reads (json_field_writer.h), by the type of the place.
  void operator()(const char* key, std::string& out) { str(key, &out); }
  void operator()(const char* key, double& out) { num(key, &out); }
  void operator()(const char* key, bool& out) { boolean(key, &out); }
  void operator()(const char* key, std::optional<double>& out) { optional_num(key, &out); }
  void operator()(const char* key, std::optional<bool>& out) { optional_boolean(key, &out); }
  template <typename Int, std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, bool>, int> = 0>
  void operator()(const char* key, Int& out) {
    integer(key, &out);
  }
  template <typename Item>
  void operator()(const char* key, std::vector<Item>& out) {
    list(key, &out);
  }
  void operator()(const char* key, std::map<std::string, std::string>& out) { str_map(key, &out); }
  void operator()(const char* key, std::map<int64_t, std::string>& out) { index_map(key, &out); }
  void operator()(const char* key, nlohmann::json& out) { json_object(key, &out); }
  template <typename T>
  void operator()(const char* key, std::optional<T>& out) {
    if (!present(key)) return;
    T value{};
    (*this)(key, value);
    if (!failed()) out = std::move(value);
  }
  /// A field that must be there: absent (or null), it is named as missing.
  template <typename T>
  void operator()(const char* key, T& out, Required) {
    if (!missing(key)) (*this)(key, out);
  }
  /// `fields(reader, *out)` for the object under `key`, when present.
  template <typename T, typename Fields>
  void object(const char* key, T& out, Fields fields) {
    object(key, [&](JsonFields& r) { fields(r, out); });
  }
  template <typename T, typename Fields>
  void object(const char* key, std::optional<T>& out, Fields fields) {
    object(key, [&](JsonFields& r) { fields(r, out.emplace()); });
  }
  /// `fields(reader, item)` for a new item of `out` per object of the array under `key`.
  template <typename T, typename Fields>
  void objects(const char* key, std::vector<T>& out, Fields fields) {
    objects(key, [&](JsonFields& r) { fields(r, out.emplace_back()); });
  }
  template <typename T, typename Fields>
  void objects(const char* key, std::vector<T>& out, Fields fields, Required) {
    if (!missing(key)) objects(key, out, fields);
  }

 private:
  std::string join(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  void fail(const std::string& at, const nlohmann::json& x, const char* want) {
    if (error_->empty()) *error_ = at + " is " + json_type_phrase(x) + ", not " + want;
  }

  template <typename Int>
  static bool fits(const nlohmann::json& v) {
    if (v.is_number_unsigned()) return v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<Int>::max());
    const int64_t x = v.get<int64_t>();
    if constexpr (std::is_signed_v<Int>) {
      return x >= static_cast<int64_t>(std::numeric_limits<Int>::min()) &&
             x <= static_cast<int64_t>(std::numeric_limits<Int>::max());
    } else {
      return x >= 0 && static_cast<uint64_t>(x) <= static_cast<uint64_t>(std::numeric_limits<Int>::max());
    }
  }

  // A required field absent (or null) is named as missing: true then.
  bool missing(const char* key) {
    if (present(key) || failed()) return false;
    read_.push_back(key);
    *error_ = join(key) + " is missing";
    return true;
  }

  bool present(const char* key) const {
    if (!j_.is_object()) return false;
    auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }
  bool was_read(const std::string& key) const {
    for (const char* k : read_) {
      if (key == k) return true;
    }
    return false;
  }
  bool too_many(const char* key, const nlohmann::json& v) {
    if (v.size() <= kMaxJsonItems) return false;
    *error_ =
        join(key) + " has " + std::to_string(v.size()) + " entries, over the cap of " + std::to_string(kMaxJsonItems);
    return true;
  }

  template <typename Pred>
  const nlohmann::json* field(const char* key, const char* want, Pred ok) {
    read_.push_back(key);
    if (failed() || !j_.is_object()) return nullptr;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return nullptr;
    if (!ok(*it)) {
      fail(join(key), *it, want);
      return nullptr;
    }
    return &*it;
  }

  template <typename Fn>
  void each(const char* key, Fn fn) {
    auto* v = field(key, "an array", [](const nlohmann::json& x) { return x.is_array(); });
    if (v == nullptr || too_many(key, *v)) return;
    for (size_t i = 0; i < v->size() && !failed(); ++i) fn((*v)[i], join(key) + "[" + std::to_string(i) + "]");
  }

  template <typename Item>
  bool item_ok(const nlohmann::json& x, const std::string& at) {
    if constexpr (std::is_same_v<Item, std::string>) {
      if (x.is_string()) return true;
      fail(at, x, "a string");
    } else if constexpr (std::is_floating_point_v<Item>) {
      if (x.is_number()) return true;
      fail(at, x, "a number");
    } else {
      if (x.is_number_integer()) return true;
      fail(at, x, "an integer");
    }
    return false;
  }

  const nlohmann::json& j_;
  std::string path_;
  std::string* error_;
  bool exact_ = false;
  std::vector<const char*> read_;  // every key asked for, present or not (refuse_unread)
};

/// `j` read through a field list into a fresh T: the reading side of fields_json
/// (json_field_writer.h). `what` names the object in messages ("the eval spec").
template <typename T, typename Fields>
Result<T> fields_from_json(const nlohmann::json& j, const std::string& what, Fields fields) {
  if (!j.is_object()) return invalid_argument(what + " is " + json_type_phrase(j) + ", not an object");
  T x;
  std::string error;
  JsonFields r(j, "", &error);
  fields(r, x);
  if (!error.empty()) return invalid_argument(what + "'s " + error);
  return x;
}

/// As fields_from_json, and a field the list does not read is refused by name too
/// ("the job.start request's timeout is not a known field"): for the messages ferry
/// writes to itself, where an unknown key is a misspelling or a peer of another
/// version, never data to skip. `also`: keys the caller reads itself.
template <typename T, typename Fields>
Result<T> exact_fields_from_json(const nlohmann::json& j, const std::string& what, Fields fields,
                                 std::initializer_list<const char*> also = {}) {
  if (!j.is_object()) return invalid_argument(what + " is " + json_type_phrase(j) + ", not an object");
  T x;
  std::string error;
  JsonFields r(j, "", &error, /*exact=*/true);
  fields(r, x);
  r.refuse_unread(also);
  if (!error.empty()) return invalid_argument(what + "'s " + error);
  return x;
}

}  // namespace ferry
