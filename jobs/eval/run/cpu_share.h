// Whether a timed pass had the CPU to itself (issue 43): a speedup measured while other
// processes took CPU compares two passes that ran at different speeds for a reason
// that is not the drafter. CpuShareMeter reads the process's CPU time
// (CLOCK_PROCESS_CPUTIME_ID, every thread's) and the wall clock at its start and when
// asked; the share is CPU seconds over wall seconds × the eval's threads. A busy host
// shows as a share well below 1 (this process's threads wait for a core); so does a
// pass whose threads idle for want of work, which is why the threshold is low.
// Plain value; the thread that runs the pass.
#pragma once

#include <optional>
#include <string>

namespace ferry::eval {

struct DecodeRun;

/// Below this share of wall × threads, the report warns that the speedup is unreliable.
inline constexpr double kLowCpuShare = 0.5;

class CpuShareMeter {
 public:
  CpuShareMeter();  // starts measuring
  /// CPU seconds of the process since the start.
  double cpu_seconds() const;
  /// Wall seconds since the start.
  double wall_seconds() const;

 private:
  double cpu0_, wall0_;
};

/// The warning for a run whose cpu_share is measured and below kLowCpuShare, naming it.
std::optional<std::string> low_cpu_share_warning(const DecodeRun& run);

}  // namespace ferry::eval
