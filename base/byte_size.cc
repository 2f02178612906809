#include "base/byte_size.h"

#include <cstdio>

namespace ferry {

namespace {

struct Unit {
  double size;
  const char* name;
  const char* format;  // GiB keeps two decimals: a checkpoint's size is read to the 10 MiB
};

Unit unit_of(double bytes) {
  constexpr double kKiB = 1024.0;
  if (bytes < kKiB) return {1, "B", "%.0f"};
  if (bytes < kKiB * kKiB) return {kKiB, "KiB", "%.1f"};
  if (bytes < kKiB * kKiB * kKiB) return {kKiB * kKiB, "MiB", "%.1f"};
  return {kKiB * kKiB * kKiB, "GiB", "%.2f"};
}

std::string number(double x, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

}  // namespace

std::string byte_size(double bytes) {
  const Unit u = unit_of(bytes);
  return number(bytes / u.size, u.format) + " " + u.name;
}

std::string byte_size_of(double part, double whole) {
  const Unit u = unit_of(whole);
  return number(part / u.size, u.format) + "/" + number(whole / u.size, u.format) + " " + u.name;
}

}  // namespace ferry
