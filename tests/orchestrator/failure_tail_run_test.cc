// A failed stage shows its cause where the user looks (issue 41, newcomer report
// U5): the real `ferry run` and `ferry status` print, under the status table, each
// failed attempt's error, the last lines of its log and the `ferry logs` command
// for the rest; --json carries them as failures[]. Local host, real agent.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

class FailureTailRunTest : public testing::FerryHomeTest {
 protected:
  // The block under the status table: from the first failed attempt's heading on.
  static std::string failures_block(const std::string& out, const std::string& heading) {
    size_t at = out.find("\n" + heading);
    return at == std::string::npos ? "" : out.substr(at);
  }
};

// 15 numbered lines, then exit 3: lines 6-15 are shown, 1-5 are not.
TEST_F(FailureTailRunTest, RunAndStatusShowTheLastTenLinesOfAFailedStagesLog) {
  auto wf = write_workflow(R"(name: tail
stages:
  s:
    run: |
      for i in $(seq 1 15); do echo "line $i"; done
      exit 3
)");
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  std::string want = "\ns attempt 1 failed: exit code 3\n  …\n";
  for (int i = 6; i <= 15; ++i) want += "  | line " + std::to_string(i) + "\n";
  want += "  the whole log: ferry logs tail-1 s\n";
  EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
  for (int i = 1; i <= 5; ++i) {
    EXPECT_EQ(r.out.find("| line " + std::to_string(i) + "\n"), std::string::npos) << i << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find("exit 3: exit code 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exit 3\n"), std::string::npos) << "the table's RESULT\n" << r.out;

  auto shown = ferry({"status", "tail-1"});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(failures_block(shown.out, "s attempt 1"), failures_block(r.out, "s attempt 1")) << shown.out;
  EXPECT_EQ(shown.out.find("exit 3: exit code 3"), std::string::npos) << shown.out;

  auto j = status("tail-1");
  ASSERT_EQ(j["failures"].size(), 1u) << j.dump(2);
  const auto& f = j["failures"][0];
  EXPECT_EQ(f["stage"], "s");
  EXPECT_EQ(f["attempt"], 1);
  EXPECT_EQ(f["state"], "failed");
  EXPECT_EQ(f["error"], "exit code 3");
  ASSERT_EQ(f["log_tail"].size(), 10u) << f.dump(2);
  EXPECT_EQ(f["log_tail"][0], "line 6");
  EXPECT_EQ(f["log_tail"][9], "line 15");
  EXPECT_EQ(f["log_tail_cut"], true);
  EXPECT_EQ(f["logs_command"], "ferry logs tail-1 s");
}

// A job's terminal escapes are shown, not obeyed, in the tail; `run --json` carries
// the same tail, and a run that succeeded has an empty failures list.
TEST_F(FailureTailRunTest, AnEscapeInTheTailIsShownEscaped) {
  auto wf = write_workflow(
      "name: esc\nstages:\n  s:\n    run: |\n      printf 'bad \\033[31mred\\033]0;owned\\007\\n'\n"
      "      exit 3\n");
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("  | bad \\x1b[31mred\\x1b]0;owned\\x07\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << "a raw ESC reached the terminal\n" << r.out;

  auto js = ferry({"run", wf, "--json"});
  ASSERT_EQ(js.exit_code, 1) << js.err;
  auto j = nlohmann::json::parse(js.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << js.out;
  ASSERT_EQ(j["failures"].size(), 1u) << js.out;
  EXPECT_EQ(j["failures"][0]["log_tail"], nlohmann::json::array({"bad \\x1b[31mred\\x1b]0;owned\\x07"}));
  EXPECT_EQ(j["failures"][0]["log_tail_cut"], false);

  auto ok = ferry({"run", write_workflow("name: fine\nstages:\n  s:\n    run: echo fine\n", "fine.yaml"), "--json"});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(nlohmann::json::parse(ok.out)["failures"], nlohmann::json::array());
}

// Every failed attempt of a retried stage, the older one's command naming its attempt.
TEST_F(FailureTailRunTest, EachFailedAttemptOfARetriedStageIsShown) {
  auto wf = write_workflow(R"(name: again
stages:
  s:
    run: |
      n=$(cat tries 2>/dev/null || echo 0); n=$((n+1)); echo $n > tries
      echo "try $n"
      exit 3
    retries: 1
    retry_backoff: 10ms
)");
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(
      r.out.find("s attempt 1 failed: exit code 3\n  | try 1\n  the whole log: ferry logs again-1 s --attempt 1\n"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("s attempt 2 failed: exit code 3\n  | try 2\n  the whole log: ferry logs again-1 s\n"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace ferry
