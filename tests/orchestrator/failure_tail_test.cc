// failure_tail (issue 41, newcomer report U5): the last lines of a failed attempt's
// log, bounded in lines, bytes and line length, terminal-safe, read from the end of
// a file of any size; and the failed attempts of a run read from a real store,
// each with the `ferry logs` command that shows the rest.
#include "orchestrator/failure_tail.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include "orchestrator/scheduler.h"
#include "tests/support/process.h"
#include "tests/support/store_test.h"

namespace ferry {
namespace {

using testing::write_text;

class FailureTailTest : public testing::TempStoreTest {
 protected:
  // The tail of a file holding `text`; `cut` as log_tail says.
  std::vector<std::string> tail_of(const std::string& text, bool* cut) {
    const std::string path = dir_.file("log");
    write_text(path, text);
    return log_tail(path, cut);
  }
  std::string numbered(int from, int to) {
    std::string s;
    for (int i = from; i <= to; ++i) s += "line " + std::to_string(i) + "\n";
    return s;
  }
};

TEST_F(FailureTailTest, KeepsTheLastTenLinesAndSaysTheRestWasCut) {
  bool cut = false;
  auto lines = tail_of(numbered(1, 15), &cut);
  std::vector<std::string> want;
  for (int i = 6; i <= 15; ++i) want.push_back("line " + std::to_string(i));
  EXPECT_EQ(lines, want);
  EXPECT_TRUE(cut);
  lines = tail_of(numbered(1, 10), &cut);
  EXPECT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines.front(), "line 1");
  EXPECT_FALSE(cut) << "ten lines are the whole log";
}

TEST_F(FailureTailTest, ALastLineWithoutANewlineIsKept) {
  bool cut = true;
  EXPECT_EQ(tail_of("one\ntwo", &cut), (std::vector<std::string>{"one", "two"}));
  EXPECT_FALSE(cut);
  EXPECT_EQ(tail_of("only", &cut), std::vector<std::string>{"only"});
  EXPECT_FALSE(cut);
}

TEST_F(FailureTailTest, AnEmptyOrMissingLogHasNoTail) {
  bool cut = true;
  EXPECT_TRUE(tail_of("", &cut).empty());
  EXPECT_FALSE(cut);
  cut = true;
  EXPECT_TRUE(log_tail(dir_.file("never-written.log"), &cut).empty());
  EXPECT_FALSE(cut);
}

// Twelve lines of 300 bytes: ten would be 3000 bytes, past kFailureTailBytes.
TEST_F(FailureTailTest, TheTailIsBoundedInBytesAndKeepsTheEnd) {
  std::string text;
  for (int i = 1; i <= 12; ++i)
    text += std::string(296, static_cast<char>('a' + i)) + " " + (i < 10 ? "0" : "") + std::to_string(i) + "\n";
  bool cut = false;
  auto lines = tail_of(text, &cut);
  ASSERT_FALSE(lines.empty());
  EXPECT_LT(lines.size(), 10u);
  size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size();
  EXPECT_LE(bytes, kFailureTailBytes);
  EXPECT_EQ(lines.back().substr(lines.back().size() - 3), " 12") << "the last line, not the first";
  EXPECT_TRUE(cut);
}

TEST_F(FailureTailTest, ALongLineIsCutAndKeptValidUtf8) {
  bool cut = false;
  // 399 ASCII bytes, then é (2 bytes) across the 400-byte cut.
  const std::string long_line = std::string(399, 'x') + "\xc3\xa9" + std::string(600, 'y');
  auto lines = tail_of("first\n" + long_line + "\nlast\n", &cut);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "first");
  EXPECT_EQ(lines[1], std::string(399, 'x') + "…") << "not half of é";
  EXPECT_EQ(lines[2], "last");
  // One line longer than all that is read: its end is shown.
  lines = tail_of(std::string(10000, 'z') + "END\n", &cut);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_LE(lines[0].size(), 400u + 3u);
  EXPECT_EQ(lines[0].substr(lines[0].size() - 3), "END");
  EXPECT_TRUE(cut);
}

TEST_F(FailureTailTest, ControlCharactersAreShownEscaped) {
  bool cut = false;
  auto lines = tail_of("plain\nbad \033[31mred\033]0;title\007\n", &cut);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "bad \\x1b[31mred\\x1b]0;title\\x07");
}

// A big log is read from its end: the tail of 6.9 MB of numbered lines.
TEST_F(FailureTailTest, ABigLogsTailIsItsEnd) {
  const std::string path = dir_.file("big.log");
  auto r = testing::run_process({"sh", "-c", "seq 1 1000000 > '" + path + "'"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  bool cut = false;
  auto lines = log_tail(path, &cut);
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines.front(), "999991");
  EXPECT_EQ(lines.back(), "1000000");
  EXPECT_TRUE(cut);
}

// Two failed attempts of one stage: each with its error and its own log's tail; the
// older one's command names its attempt. Succeeded stages are not listed.
TEST_F(FailureTailTest, EveryFailedAttemptOfAFailedStageIsListedWithItsLogsCommand) {
  auto run = store_->create_run("wf", "wf.yaml", "", {}, {{"ok", "command", "h"}, {"s", "command", "h"}});
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_TRUE(store_->begin_attempt(run->id, "ok", 1, "t0", "hash").ok());
  ASSERT_TRUE(store_->finish_attempt(run->id, "ok", 1, StageState::kSucceeded, 0, "").ok());
  ASSERT_TRUE(store_->begin_attempt(run->id, "s", 1, "t1", "hash").ok());
  ASSERT_TRUE(store_->finish_attempt(run->id, "s", 1, StageState::kFailed, 3, "exit code 3").ok());
  ASSERT_TRUE(store_->begin_attempt(run->id, "s", 2, "t2", "hash").ok());
  ASSERT_TRUE(store_->finish_attempt(run->id, "s", 2, StageState::kTimedOut, std::nullopt, "timed out").ok());
  const std::string logs = dir_.file("logs");
  for (int attempt : {1, 2}) {
    const std::string path = Scheduler::log_path(logs, run->id, "s", attempt);
    ASSERT_EQ(testing::run_process({"mkdir", "-p", path.substr(0, path.rfind('/'))}).exit_code, 0);
    write_text(path, "attempt " + std::to_string(attempt) + " said\n");
  }
  auto fresh = store_->find_run(run->id);
  auto stages = store_->stages(run->id);
  ASSERT_TRUE(fresh.ok() && stages.ok());
  auto failures = failed_attempts(*store_, *fresh, *stages, logs);
  ASSERT_TRUE(failures.ok()) << failures.status().message();
  ASSERT_EQ(failures->size(), 2u);
  EXPECT_EQ((*failures)[0].attempt, 1);
  EXPECT_EQ((*failures)[0].error, "exit code 3");
  EXPECT_EQ((*failures)[0].tail, std::vector<std::string>{"attempt 1 said"});
  EXPECT_EQ((*failures)[0].logs_command, "ferry logs " + run->id + " s --attempt 1");
  EXPECT_EQ((*failures)[1].state, StageState::kTimedOut);
  EXPECT_EQ((*failures)[1].logs_command, "ferry logs " + run->id + " s");

  std::string shown = render_failures(*failures, false);
  EXPECT_NE(shown.find("s attempt 1 failed: exit code 3\n  | attempt 1 said\n  the whole log: ferry logs " + run->id +
                       " s --attempt 1\n"),
            std::string::npos)
      << shown;
  EXPECT_NE(shown.find("s attempt 2 timed_out: timed out\n"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("\033["), std::string::npos) << "no colour asked for";
  auto j = failures_json(*failures);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["stage"], "s");
  EXPECT_EQ(j[1]["state"], "timed_out");
  EXPECT_EQ(j[1]["log_tail"], nlohmann::json::array({"attempt 2 said"}));
  EXPECT_EQ(j[1]["log_tail_cut"], false);
}

}  // namespace
}  // namespace ferry
