// The clocks: wall time for records people read (started_ms, ended_ms, events),
// the monotonic clock for deadlines, backoff and rates (it never jumps when the
// system time is set). Any thread; async-signal-safe (clock_gettime), so a
// forked child may use them too.
#pragma once

#include <cstdint>

namespace ferry {

/// Milliseconds since the Unix epoch.
int64_t now_ms();
/// Monotonic milliseconds, from an arbitrary start.
int64_t mono_ms();
/// Monotonic seconds, from the same start as mono_ms.
double mono_s();

}  // namespace ferry
