#include "jobs/eval/run/cpu_share.h"

#include <time.h>

#include <cstdio>

#include "jobs/eval/run/eval_report.h"

namespace ferry::eval {
namespace {

double clock_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

CpuShareMeter::CpuShareMeter()
    : cpu0_(clock_seconds(CLOCK_PROCESS_CPUTIME_ID)),
      wall0_(clock_seconds(CLOCK_MONOTONIC)) {}

double CpuShareMeter::cpu_seconds() const { return clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0_; }

double CpuShareMeter::wall_seconds() const { return clock_seconds(CLOCK_MONOTONIC) - wall0_; }

std::optional<std::string> low_cpu_share_warning(const DecodeRun& run) {
  if (run.cpu_capacity_seconds <= 0 || run.cpu_share >= kLowCpuShare) return std::nullopt;
  char text[320];
  std::snprintf(text, sizeof text,
                "the %s pass had %.0f %% of its threads' CPU time (%.2f of %.2f s; below %.0f %%): other processes "
                "took CPU while it was timed, so the speedup is not reliable",
                run.label.c_str(), 100 * run.cpu_share, run.cpu_seconds, run.cpu_capacity_seconds, 100 * kLowCpuShare);
  return std::string(text);
}

}  // namespace ferry::eval
