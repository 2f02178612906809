#include "jobs/eval/run/cpu_contention.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "jobs/eval/run/eval_report.h"

namespace ferry::eval {
namespace {

double clock_seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct MachineBusy {
  double seconds = 0;  // busy time summed over every core
  int cores = 0;
};

// The first line of /proc/stat ("cpu  user nice system idle iowait irq softirq steal
// ...", in clock ticks) and the count of its "cpuN" lines; nullopt when unreadable.
std::optional<MachineBusy> read_machine_busy() {
  std::ifstream in("/proc/stat");
  std::string line;
  if (!in || !std::getline(in, line) || line.rfind("cpu ", 0) != 0) return std::nullopt;
  std::istringstream fields(line.substr(4));
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(fields >> user >> nice >> system >> idle >> iowait >> irq >> softirq)) return std::nullopt;
  fields >> steal;  // absent on old kernels
  MachineBusy busy;
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return std::nullopt;
  busy.seconds = static_cast<double>(user + nice + system + irq + softirq + steal) / static_cast<double>(ticks);
  while (std::getline(in, line) && line.rfind("cpu", 0) == 0) ++busy.cores;
  if (busy.cores == 0) return std::nullopt;
  return busy;
}

}  // namespace

double contending_seconds(double machine_busy_seconds, double own_seconds, double wall_seconds, int cores,
                          int threads) {
  const double others = std::max(0.0, machine_busy_seconds - own_seconds);
  const double free_cores = std::max(0, cores - threads);
  return std::max(0.0, others - free_cores * wall_seconds);
}

CpuContentionMeter::CpuContentionMeter()
    : own0_(clock_seconds(CLOCK_PROCESS_CPUTIME_ID)),
      wall0_(clock_seconds(CLOCK_MONOTONIC)) {
  if (auto busy = read_machine_busy()) busy0_ = busy->seconds;
}

CpuContention CpuContentionMeter::finish(int threads) const {
  CpuContention c;
  const double wall = clock_seconds(CLOCK_MONOTONIC) - wall0_;
  c.own_seconds = clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - own0_;
  c.capacity_seconds = wall * threads;
  auto busy = read_machine_busy();
  if (busy0_ && busy)
    c.contending_seconds = contending_seconds(busy->seconds - *busy0_, c.own_seconds, wall, busy->cores, threads);
  return c;
}

std::optional<std::string> cpu_contention_warning(const DecodeRun& run) {
  if (run.cpu_contention < kContendedShare || run.contending_cpu_seconds < kMinContendingSeconds) return std::nullopt;
  char text[360];
  std::snprintf(text, sizeof text,
                "other processes took %.0f %% of the %s pass's threads' time (%.2f of %.2f CPU s beyond the cores it "
                "left free; %.0f %% or more warns): the speedup is not reliable",
                100 * run.cpu_contention, run.label.c_str(), run.contending_cpu_seconds, run.cpu_capacity_seconds,
                100 * kContendedShare);
  return std::string(text);
}

}  // namespace ferry::eval
