// Durations in workflow files: "90", "90s", "500ms", "5m", "2h", "1h30m".
#include "workflows/duration.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ferry::workflow {
namespace {

TEST(DurationTest, ParsesUnitsAndSums) {
  struct Case {
    const char* text;
    double seconds;
  };
  for (const Case& c : std::vector<Case>{
           {"0", 0},
           {"90", 90},
           {"90s", 90},
           {"1.5s", 1.5},
           {".5s", 0.5},
           {"500ms", 0.5},
           {"5m", 300},
           {"2h", 7200},
           {"1h30m", 5400},
           {"1m30s", 90},
           {"1h1m1s1ms", 3661.001},
           {"0.25h", 900},
       }) {
    auto d = parse_duration(c.text);
    ASSERT_TRUE(d.has_value()) << c.text;
    EXPECT_DOUBLE_EQ(*d, c.seconds) << c.text;
  }
}

TEST(DurationTest, RejectsWhatIsNotADuration) {
  for (const char* text : {"", " ", "s", "ms", "m5", "5 m", "5 minutes", "5min", "5M", "5S", "1d", "-5s", "+5s",
                           "1.2.3s", ".", "5s ", " 5s", "1e3", "5;", "90 ", "5s-", "1h 30m", "five"}) {
    EXPECT_FALSE(parse_duration(text).has_value()) << "'" << text << "'";
  }
}

// A bare number is seconds, also after a unit: "1m30" is 90s, not 1h30m.
TEST(DurationTest, TrailingBareNumberIsSeconds) {
  auto d = parse_duration("1m30");
  ASSERT_TRUE(d.has_value());
  EXPECT_DOUBLE_EQ(*d, 90);
  // ...but only at the end: a bare number followed by more is an error.
  EXPECT_FALSE(parse_duration("30 1m").has_value());
  EXPECT_FALSE(parse_duration("1m30-1s").has_value());
}

}  // namespace
}  // namespace ferry::workflow
