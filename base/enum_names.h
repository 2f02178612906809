// EnumName tables: an enum's values and the names they are written as (in the
// store, in workflow files, on the command line), listed once and read both ways.
// A table holds every value of its enum; a value missing from it is named "?".
// Pure functions over constant tables.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace ferry {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

/// The name of `value`; "?" when the table lacks it.
template <typename E, size_t N>
const char* enum_name(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& e : table) {
    if (e.value == value) return e.name;
  }
  return "?";
}

/// The value named `name`; none when no entry has that name.
template <typename E, size_t N>
std::optional<E> enum_from_name(const EnumName<E> (&table)[N], const std::string& name) {
  for (const EnumName<E>& e : table) {
    if (name == e.name) return e.value;
  }
  return std::nullopt;
}

/// Every name in table order, ", "-separated: what an error lists as the choices.
template <typename E, size_t N>
std::string enum_names(const EnumName<E> (&table)[N]) {
  std::string out;
  for (const EnumName<E>& e : table) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}

}  // namespace ferry
