#include "orchestrator/hosts/idle_lanes.h"

namespace ferry {

void IdleLanes::call_started(const LaneId& lane, int64_t now_ms) {
  Use& u = lanes_[lane];
  ++u.calls;
  u.last_ms = now_ms;
}

void IdleLanes::call_ended(const LaneId& lane, int64_t now_ms) {
  auto it = lanes_.find(lane);
  if (it == lanes_.end()) return;
  if (it->second.calls > 0) --it->second.calls;
  it->second.last_ms = now_ms;
}

std::vector<LaneId> IdleLanes::take_idle(int64_t now_ms) {
  std::vector<LaneId> idle;
  for (auto it = lanes_.begin(); it != lanes_.end();) {
    if (it->second.calls == 0 && now_ms - it->second.last_ms >= close_after_ms_) {
      idle.push_back(it->first);
      it = lanes_.erase(it);
    } else {
      ++it;
    }
  }
  return idle;
}

}  // namespace ferry
