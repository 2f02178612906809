// The run lock as `ferry status` sees it: asked without being taken, and never
// confused by a run that has no lock file (one recorded before the lock existed).
#include "orchestrator/run_lock.h"

#include <gtest/gtest.h>

#include "orchestrator/store.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

TEST(RunLockTest, HeldSaysWhetherACoordinatorHoldsTheRunNow) {
  testing::TempDir home;
  const std::string db = home.file("ferry.db");
  EXPECT_EQ(RunLock::held(db, "wf-1", ""), std::nullopt) << "no lock file: nothing to ask";
  {
    auto lock = RunLock::take(db, "wf-1", "");
    ASSERT_TRUE(lock.ok()) << lock.status().message();
    EXPECT_EQ(RunLock::held(db, "wf-1", ""), std::optional<bool>(true));
    auto second = RunLock::take(db, "wf-1", "");
    EXPECT_FALSE(second.ok()) << "the probe above must not have left a lock of its own behind, nor taken this one";
  }
  EXPECT_EQ(RunLock::held(db, "wf-1", ""), std::optional<bool>(false)) << "released when its holder let go";
  EXPECT_TRUE(RunLock::take(db, "wf-1", "").ok()) << "the probe let go of its shared lock";
}

// Review N11: two databases in one folder both count "wf-1"; their runs are
// different runs, and one coordinator must not refuse the other's.
TEST(RunLockTest, TwoDatabasesInOneFolderLockTheirOwnRuns) {
  testing::TempDir home;
  auto a = Store::open(home.file("a.db"));
  auto b = Store::open(home.file("b.db"));
  ASSERT_TRUE(a.ok() && b.ok());
  auto run_a = (*a)->create_run("wf", "wf.yaml", "name: wf", nlohmann::json::object(), {});
  auto run_b = (*b)->create_run("wf", "wf.yaml", "name: wf", nlohmann::json::object(), {});
  ASSERT_TRUE(run_a.ok() && run_b.ok());
  ASSERT_EQ(run_a->id, run_b->id) << "the case at hand: one run id in both databases";
  auto lock_a = RunLock::take((*a)->path(), run_a->id, run_a->uid);
  ASSERT_TRUE(lock_a.ok()) << lock_a.status().message();
  auto lock_b = RunLock::take((*b)->path(), run_b->id, run_b->uid);
  EXPECT_TRUE(lock_b.ok()) << lock_b.status().message();
  EXPECT_EQ(RunLock::held((*b)->path(), run_b->id, run_b->uid), std::optional<bool>(true));
  EXPECT_FALSE(RunLock::take((*a)->path(), run_a->id, run_a->uid).ok()) << "each run is still locked";
}

}  // namespace
}  // namespace ferry
