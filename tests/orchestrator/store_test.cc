// The state store on a real SQLite file: schema, exactly-once attempt ends,
// events written with each change, concurrent readers.
#include "orchestrator/store.h"

#include <gtest/gtest.h>

#include "tests/support/process.h"
#include "tests/support/store_test.h"

namespace ferry {
namespace {

class StoreTest : public testing::TempStoreTest {};

TEST_F(StoreTest, CreatesRunsWithIdsAndStagesInOrder) {
  auto a = store_->create_run("wf", "wf.yaml", "name: wf", {{"p", "1"}}, {{"b", "command", "h"}, {"a", "eval", ""}});
  auto b = store_->create_run("wf", "wf.yaml", "name: wf", {}, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->id, "wf-1");
  EXPECT_EQ(b->id, "wf-2");
  auto stages = store_->stages("wf-1");
  ASSERT_TRUE(stages.ok());
  ASSERT_EQ(stages->size(), 2u);
  EXPECT_EQ((*stages)[0].name, "b");
  EXPECT_EQ((*stages)[1].kind, "eval");
  auto last = store_->find_run("last");
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->id, "wf-2");
  auto missing = store_->find_run("nope-9");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST_F(StoreTest, RunsOfTwoDatabasesShareTheIdButNotTheJobKey) {
  auto other = Store::open(dir_.file("other.db"));
  ASSERT_TRUE(other.ok());
  auto a = store_->create_run("wf", "wf.yaml", "", {}, {{"s", "command", "h"}});
  auto b = (*other)->create_run("wf", "wf.yaml", "", {}, {{"s", "command", "h"}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->id, b->id);
  EXPECT_NE(a->uid, b->uid);
  EXPECT_EQ(a->uid.size(), 8u);
  EXPECT_EQ(a->job_key("s"), "wf-1." + a->uid + ".s");
  EXPECT_NE(a->job_key("s"), b->job_key("s"));
  auto again = store_->find_run("wf-1");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->uid, a->uid) << "the uid is stored, not made anew";
  RunRecord legacy;  // recorded before schema 2
  legacy.id = "wf-1";
  EXPECT_EQ(legacy.job_key("s"), "wf-1.s");
}

TEST_F(StoreTest, AnAttemptEndIsRecordedExactlyOnce) {
  auto run = store_->create_run("wf", "wf.yaml", "", {}, {{"s", "command", "h"}});
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(store_->begin_attempt(run->id, "s", 1, "tok", "hash").ok());
  auto first = store_->finish_attempt(run->id, "s", 1, StageState::kSucceeded, 0, "");
  auto second = store_->finish_attempt(run->id, "s", 1, StageState::kFailed, 9, "late duplicate");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(*first);
  EXPECT_FALSE(*second);
  auto stages = store_->stages(run->id);
  EXPECT_EQ((*stages)[0].state, StageState::kSucceeded);
  EXPECT_EQ((*stages)[0].exit_code, 0);
  auto events = store_->events(run->id, "s");
  int finished = 0;
  for (const auto& e : *events) finished += e.type == "attempt.finished";
  EXPECT_EQ(finished, 1);
}

// Runs recorded by earlier versions must read back: the stored words stay the same.
TEST_F(StoreTest, StatesAreStoredByTheWordsEarlierVersionsWrote) {
  auto run = store_->create_run("wf", "wf.yaml", "", {}, {{"a", "command", "h"}, {"b", "command", "h"}});
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(store_->begin_attempt(run->id, "a", 1, "tok", "hash").ok());
  ASSERT_TRUE(store_->finish_attempt(run->id, "a", 1, StageState::kTimedOut, std::nullopt, "slow").ok());
  ASSERT_TRUE(store_->set_stage_state(run->id, "b", StageState::kSkipped, "needs a").ok());
  ASSERT_TRUE(store_->set_run_state(run->id, RunState::kCancelled, 0).ok());
  auto rows = testing::run_process(
      {"sqlite3", "-cmd", ".timeout 10000", dir_.file("ferry.db"),
       "SELECT state FROM stages ORDER BY position; SELECT state FROM attempts; SELECT state FROM runs;"});
  ASSERT_EQ(rows.exit_code, 0) << rows.err;
  EXPECT_EQ(rows.out, "timed_out\nskipped\ntimed_out\ncancelled\n");

  // A word no version wrote is a damaged file, said as such, not a guess.
  auto bad = testing::run_process(
      {"sqlite3", "-cmd", ".timeout 10000", dir_.file("ferry.db"), "UPDATE stages SET state='runing' WHERE name='b';"});
  ASSERT_EQ(bad.exit_code, 0) << bad.err;
  auto stages = store_->stages(run->id);
  ASSERT_FALSE(stages.ok());
  EXPECT_NE(stages.status().message().find("unknown stage state 'runing'"), std::string::npos)
      << stages.status().message();
}

TEST_F(StoreTest, OutputsMetricsAndProgressAreReadBack) {
  auto run = store_->create_run("wf", "wf.yaml", "", {}, {{"s", "eval", ""}});
  ASSERT_TRUE(store_->set_outputs(run->id, "s", {{"path", "/x"}}).ok());
  ASSERT_TRUE(store_->set_metrics(run->id, "s", {{"tau", 3.25}}).ok());
  ASSERT_TRUE(store_->set_progress(run->id, "s", {{"bytes_done", 5}}).ok());
  auto st = store_->stages(run->id);
  EXPECT_EQ((*st)[0].outputs["path"], "/x");
  EXPECT_DOUBLE_EQ((*st)[0].metrics["tau"], 3.25);
  EXPECT_EQ((*st)[0].progress["bytes_done"], 5);
}

TEST_F(StoreTest, ASecondConnectionSeesCommittedChanges) {
  auto run = store_->create_run("wf", "wf.yaml", "", {}, {{"s", "command", "h"}});
  auto other = Store::open(dir_.file("ferry.db"));
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(store_->request_cancel(run->id).ok());
  auto seen = (*other)->find_run(run->id);
  ASSERT_TRUE(seen.ok());
  EXPECT_TRUE(seen->cancel_requested);
}

TEST_F(StoreTest, RefusesADatabaseFromANewerFerry) {
  store_.reset();
  auto r =
      testing::run_process({"sqlite3", "-cmd", ".timeout 10000", dir_.file("ferry.db"), "PRAGMA user_version=99;"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = Store::open(dir_.file("ferry.db"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("newer than this ferry"), std::string::npos);
}

}  // namespace
}  // namespace ferry
