// LogTapEnv hands a job's log to its stage line by line (jobs/log_tap_env.h), over
// an env that only keeps the log: a newline-less log (`\r` progress bars) stays
// bounded, and the lines around it arrive whole (review N9).
#include "jobs/log_tap_env.h"

#include <gtest/gtest.h>

#include "tests/support/scripted_stage_env.h"

namespace ferry {
namespace {

// Keeps the log in memory; nothing else is used by LogTapEnv::append_log.
using LogOnlyEnv = testing::ScriptedStageEnv;

TEST(LogTapEnvTest, LinesCutAcrossReadsArriveWhole) {
  LogOnlyEnv env;
  std::vector<std::string> lines;
  LogTapEnv tap(env, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_TRUE(tap.append_log("step 1\nst").ok());
  ASSERT_TRUE(tap.append_log("ep 2").ok());
  ASSERT_TRUE(tap.append_log("\n\nstep 3\n").ok());
  EXPECT_EQ(lines, (std::vector<std::string>{"step 1", "step 2", "", "step 3"}));
  EXPECT_EQ(env.log, "step 1\nstep 2\n\nstep 3\n");
}

TEST(LogTapEnvTest, ALineWithoutEndIsCutAt64KiBAndTheNextLineIsWhole) {
  LogOnlyEnv env;
  std::vector<std::string> lines;
  LogTapEnv tap(env, [&](const std::string& l) { lines.push_back(l); });
  // 8 MiB of a progress bar redrawn with \r, read 4 KiB at a time as the stage does.
  std::string bar = "\r 42% |#####     | 4242/10000";
  std::string piece;
  while (piece.size() < 4096) piece += bar;
  size_t total = 0;
  for (; total < (8u << 20); total += piece.size()) ASSERT_TRUE(tap.append_log(piece).ok());
  ASSERT_TRUE(tap.append_log("\nresult: ok\n").ok());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].size(), 64u * 1024) << "the long line is held to 64 KiB";
  EXPECT_EQ(lines[0].compare(0, bar.size(), bar), 0) << "its head is kept";
  EXPECT_EQ(lines[1], "result: ok");
  EXPECT_EQ(env.log.size(), total + 12) << "the log itself keeps every byte";
}

}  // namespace
}  // namespace ferry
