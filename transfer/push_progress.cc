#include "transfer/push_progress.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace ferry {
namespace {

std::string trim_eol(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

bool parse_int(const std::string& v, int64_t* out) {
  if (v.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || x < 0) return false;
  *out = x;
  return true;
}

bool parse_double(const std::string& v, double* out) {
  if (v.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (errno != 0 || *end != '\0' || !(x >= 0)) return false;  // also refuses NaN
  *out = x;
  return true;
}

}  // namespace

std::string format_push_progress(const PushProgress& p) {
  char rate[32];
  std::snprintf(rate, sizeof rate, "%.0f", p.rate);
  std::ostringstream s;
  s << kPushProgressPrefix << "done=" << p.bytes_done << " total=" << p.bytes_total << " sent=" << p.bytes_sent
    << " resent=" << p.bytes_resent << " skipped=" << p.bytes_skipped << " rate=" << rate
    << " elapsed_ms=" << p.elapsed_ms << " files=" << p.files_done << "/" << p.files;
  return s.str();
}

std::optional<PushProgress> parse_push_progress(const std::string& raw) {
  std::string line = trim_eol(raw);
  const std::string prefix = kPushProgressPrefix;
  if (line.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  PushProgress p;
  bool have_done = false, have_total = false;
  std::istringstream words(line.substr(prefix.size()));
  std::string word;
  while (words >> word) {
    size_t eq = word.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    bool ok = true;
    if (key == "done")
      ok = have_done = parse_int(value, &p.bytes_done);
    else if (key == "total")
      ok = have_total = parse_int(value, &p.bytes_total);
    else if (key == "sent")
      ok = parse_int(value, &p.bytes_sent);
    else if (key == "resent")
      ok = parse_int(value, &p.bytes_resent);
    else if (key == "skipped")
      ok = parse_int(value, &p.bytes_skipped);
    else if (key == "rate")
      ok = parse_double(value, &p.rate);
    else if (key == "elapsed_ms")
      ok = parse_int(value, &p.elapsed_ms);
    else if (key == "files") {
      size_t slash = value.find('/');
      int64_t done = 0, all = 0;
      ok = slash != std::string::npos && parse_int(value.substr(0, slash), &done) &&
           parse_int(value.substr(slash + 1), &all) && done <= all;
      p.files_done = static_cast<int>(done);
      p.files = static_cast<int>(all);
    }
    if (!ok) return std::nullopt;
  }
  if (!have_done || !have_total || p.bytes_done > p.bytes_total) return std::nullopt;
  return p;
}

std::optional<std::string> parse_push_error(const std::string& raw) {
  std::string line = trim_eol(raw);
  const std::string prefix = kPushErrorPrefix;
  if (line.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return line.substr(prefix.size());
}

}  // namespace ferry
