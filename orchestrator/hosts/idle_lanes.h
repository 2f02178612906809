// IdleLanes: which data lanes (a copy's parallel streams to a host, each a channel
// of the host's SSH session and an agent on the host) have gone unused long enough
// to close. A relay opens up to `streams` of them per host and used to keep them for
// the whole run; a long run after a copy then held idle sessions for hours
// (review-faults-3, F19). The scheduler tells this when a lane's call starts and ends, and every few
// seconds closes what idle() names; a later call opens the lane again. Plain logic
// with the time passed in; io thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ferry {

/// A data lane: its host, and its number there (1, 2, ...).
using LaneId = std::pair<std::string, int>;

class IdleLanes {
 public:
  explicit IdleLanes(int64_t close_after_ms) : close_after_ms_(close_after_ms) {}

  void call_started(const LaneId& lane, int64_t now_ms);
  void call_ended(const LaneId& lane, int64_t now_ms);
  /// Lanes with no call in flight and none for close_after_ms; they are forgotten
  /// (a new call tracks them again).
  std::vector<LaneId> take_idle(int64_t now_ms);

 private:
  struct Use {
    int calls = 0;        // in flight
    int64_t last_ms = 0;  // the last start or end
  };
  int64_t close_after_ms_;
  std::map<LaneId, Use> lanes_;
};

}  // namespace ferry
