// IdleLanes (orchestrator/idle_lanes.h) with the time passed in: a lane is named idle
// only with no call in flight and none for the whole interval, and only once.
#include "orchestrator/idle_lanes.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

using Names = std::vector<std::string>;

TEST(IdleLanesTest, ALaneIsClosedOnlyAfterTheIntervalWithNoCallInFlight) {
  IdleLanes lanes(60'000);
  lanes.call_started("a#1", 0);
  lanes.call_started("a#2", 0);
  lanes.call_ended("a#2", 1'000);
  EXPECT_EQ(lanes.take_idle(60'999), Names{});       // a#2 ended at 1 s: 59.999 s idle
  EXPECT_EQ(lanes.take_idle(61'000), Names{"a#2"});  // a#1 still has its call in flight
  EXPECT_EQ(lanes.take_idle(500'000), Names{});      // a#2 named once; a#1 still busy
  lanes.call_ended("a#1", 500'000);
  EXPECT_EQ(lanes.take_idle(559'999), Names{});
  EXPECT_EQ(lanes.take_idle(560'000), Names{"a#1"});
}

TEST(IdleLanesTest, ACallOnAClosedLaneTracksItAgain) {
  IdleLanes lanes(10);
  lanes.call_started("b#1", 0);
  lanes.call_ended("b#1", 0);
  EXPECT_EQ(lanes.take_idle(10), Names{"b#1"});
  lanes.call_ended("b#1", 20);  // a late reply to a forgotten lane changes nothing
  EXPECT_EQ(lanes.take_idle(100), Names{});
  lanes.call_started("b#1", 100);  // reopened
  lanes.call_started("b#1", 100);
  lanes.call_ended("b#1", 105);
  EXPECT_EQ(lanes.take_idle(200), Names{});  // one call still in flight
  lanes.call_ended("b#1", 200);
  EXPECT_EQ(lanes.take_idle(210), Names{"b#1"});
}

}  // namespace
}  // namespace ferry
