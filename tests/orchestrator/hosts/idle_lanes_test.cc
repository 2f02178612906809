// IdleLanes (orchestrator/hosts/idle_lanes.h) with the time passed in: a lane is named idle
// only with no call in flight and none for the whole interval, and only once.
#include "orchestrator/hosts/idle_lanes.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

using Names = std::vector<LaneId>;
const LaneId a1{"a", 1}, a2{"a", 2}, b1{"b", 1};  // lanes 1 and 2 of host a, lane 1 of b

TEST(IdleLanesTest, ALaneIsClosedOnlyAfterTheIntervalWithNoCallInFlight) {
  IdleLanes lanes(60'000);
  lanes.call_started(a1, 0);
  lanes.call_started(a2, 0);
  lanes.call_ended(a2, 1'000);
  EXPECT_EQ(lanes.take_idle(60'999), Names{});    // a2 ended at 1 s: 59.999 s idle
  EXPECT_EQ(lanes.take_idle(61'000), Names{a2});  // a1 still has its call in flight
  EXPECT_EQ(lanes.take_idle(500'000), Names{});   // a2 named once; a1 still busy
  lanes.call_ended(a1, 500'000);
  EXPECT_EQ(lanes.take_idle(559'999), Names{});
  EXPECT_EQ(lanes.take_idle(560'000), Names{a1});
}

TEST(IdleLanesTest, ACallOnAClosedLaneTracksItAgain) {
  IdleLanes lanes(10);
  lanes.call_started(b1, 0);
  lanes.call_ended(b1, 0);
  EXPECT_EQ(lanes.take_idle(10), Names{b1});
  lanes.call_ended(b1, 20);  // a late reply to a forgotten lane changes nothing
  EXPECT_EQ(lanes.take_idle(100), Names{});
  lanes.call_started(b1, 100);  // reopened
  lanes.call_started(b1, 100);
  lanes.call_ended(b1, 105);
  EXPECT_EQ(lanes.take_idle(200), Names{});  // one call still in flight
  lanes.call_ended(b1, 200);
  EXPECT_EQ(lanes.take_idle(210), Names{b1});
}

}  // namespace
}  // namespace ferry
