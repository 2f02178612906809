// Sizes as the status table and the copy's progress lines show them: a small copy
// reads "812 B", not "0.0/0.0 MiB"; a part is shown in its whole's unit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/byte_size.h"
#include "orchestrator/status_view.h"

namespace ferry {
namespace {

TEST(ByteSizeTest, EachSizeInTheLargestUnitItFills) {
  EXPECT_EQ(byte_size(0), "0 B");
  EXPECT_EQ(byte_size(812), "812 B");
  EXPECT_EQ(byte_size(1023), "1023 B");
  EXPECT_EQ(byte_size(1024), "1.0 KiB");
  EXPECT_EQ(byte_size(3.5 * 1024), "3.5 KiB");
  EXPECT_EQ(byte_size(1024.0 * 1024), "1.0 MiB");
  EXPECT_EQ(byte_size(17.0 * 1024 * 1024 * 1024), "17.00 GiB");
}

TEST(ByteSizeTest, APartIsShownInItsWholesUnit) {
  EXPECT_EQ(byte_size_of(0, 812), "0/812 B");
  EXPECT_EQ(byte_size_of(512, 2048), "0.5/2.0 KiB");
  EXPECT_EQ(byte_size_of(8.5 * 1024 * 1024 * 1024, 17.0 * 1024 * 1024 * 1024), "8.50/17.00 GiB");
}

TEST(CopyProgressLineTest, ASmallCopySaysItsBytes) {
  const nlohmann::json p = {{"bytes_done", 600}, {"bytes_total", 1200}, {"rate", 3000}, {"route", "relay"}};
  EXPECT_EQ(copy_progress_line(p, false), "50% 0.6/1.2 KiB, 2.9 KiB/s via relay");
}

}  // namespace
}  // namespace ferry
