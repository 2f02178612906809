// Whether a timed pass had its cores (issue 43): a speedup measured while other
// processes took CPU compares two passes that ran at different speeds for a reason
// that is not the drafter. CpuContentionMeter reads, at its start and when asked, the
// wall clock, this process's CPU time (CLOCK_PROCESS_CPUTIME_ID, every thread's) and
// the machine's busy time (/proc/stat: user, nice, system, irq, softirq and steal over
// every core). The others' CPU is the machine's less ours. The eval's threads lose time
// to them only past the cores the eval leaves free, so the contending seconds are the
// others' CPU less (cores − threads) × wall, and the contention is those seconds over
// wall × threads. A pass whose threads idle for want of work (a tiny model) is not
// contended: what counts is what others took, not what this process did not use.
// /proc/stat counts in clock ticks (10 ms), hence kMinContendingSeconds.
// Plain value; the thread that runs the pass.
#pragma once

#include <optional>
#include <string>

namespace ferry::eval {

struct DecodeRun;

/// At or above this share of the eval threads' time taken by others, the report warns
/// that the speedup is unreliable...
inline constexpr double kContendedShare = 0.25;
/// ...when that is at least this much CPU time (above /proc/stat's tick rounding).
inline constexpr double kMinContendingSeconds = 0.1;

/// What one timed pass measured: the figures of DecodeRun's cpu_* fields.
struct CpuContention {
  double own_seconds = 0;         // this process's CPU time
  double capacity_seconds = 0;    // wall × the eval's threads
  double contending_seconds = 0;  // others' CPU past the cores the eval left free
};

/// The contending seconds of a pass from what was measured (0 when others used no
/// more than the free cores).
double contending_seconds(double machine_busy_seconds, double own_seconds, double wall_seconds, int cores, int threads);

class CpuContentionMeter {
 public:
  CpuContentionMeter();  // starts measuring
  /// The figures since the start, for a pass run on `threads` threads. Without a
  /// readable /proc/stat the contending seconds are 0 (not measured).
  CpuContention finish(int threads) const;

 private:
  double own0_, wall0_;
  std::optional<double> busy0_;
};

/// The warning for a run whose contention is measured and at least kContendedShare,
/// naming it.
std::optional<std::string> cpu_contention_warning(const DecodeRun& run);

}  // namespace ferry::eval
