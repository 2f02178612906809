// The run lock as `ferry status` sees it: asked without being taken, and never
// confused by a run that has no lock file (one recorded before the lock existed).
#include "orchestrator/run_lock.h"

#include <gtest/gtest.h>

#include "tests/support/process.h"

namespace ferry {
namespace {

TEST(RunLockTest, HeldSaysWhetherACoordinatorHoldsTheRunNow) {
  testing::TempDir home;
  const std::string db = home.file("ferry.db");
  EXPECT_EQ(RunLock::held(db, "wf-1"), std::nullopt) << "no lock file: nothing to ask";
  {
    auto lock = RunLock::take(db, "wf-1");
    ASSERT_TRUE(lock.ok()) << lock.status().message();
    EXPECT_EQ(RunLock::held(db, "wf-1"), std::optional<bool>(true));
    auto second = RunLock::take(db, "wf-1");
    EXPECT_FALSE(second.ok()) << "the probe above must not have left a lock of its own behind, nor taken this one";
  }
  EXPECT_EQ(RunLock::held(db, "wf-1"), std::optional<bool>(false)) << "released when its holder let go";
  EXPECT_TRUE(RunLock::take(db, "wf-1").ok()) << "the probe let go of its shared lock";
}

}  // namespace
}  // namespace ferry
