#include "base/clock.h"

#include <ctime>

namespace ferry {

namespace {

timespec read_clock(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return ts;
}

}  // namespace

int64_t now_ms() {
  timespec ts = read_clock(CLOCK_REALTIME);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

int64_t mono_ms() {
  timespec ts = read_clock(CLOCK_MONOTONIC);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

double mono_s() {
  timespec ts = read_clock(CLOCK_MONOTONIC);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace ferry
