// The eval's progress: its lines for people and for ferry, and the ETA from a clock
// the test moves (prompts done over all runs against the time since decoding began).
#include "jobs/eval/run/progress_meter.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "jobs/eval/run/eval_progress.h"

namespace ferry::eval {
namespace {

using Clock = ProgressMeter::Clock;
using std::chrono::seconds;

TEST(ProgressMeterTest, EachResponseWritesALineForPeopleAndOneForFerry) {
  std::vector<std::string> lines;
  const Clock::time_point t0{};
  ProgressMeter meter(4, 2, [&](const std::string& l) { lines.push_back(l); }, t0);
  meter.start_run("candidate", t0);
  meter.response_done(100, 4.0, t0 + seconds(10));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "candidate: response 1/4: 100 tokens, tau 4, 10.0 tok/s, ETA 1m10s");
  const std::string marker = kEvalProgressJson;
  ASSERT_EQ(lines[1].compare(0, marker.size(), marker), 0) << lines[1];
  auto j = nlohmann::json::parse(lines[1].substr(marker.size()));
  EXPECT_EQ(j["phase"], "candidate");
  EXPECT_EQ(j["prompts_done"], 1);
  EXPECT_EQ(j["prompts_total"], 4);
  EXPECT_EQ(j["run"], 1);
  EXPECT_EQ(j["runs"], 2);
  EXPECT_EQ(j["tokens"], 100);
  EXPECT_DOUBLE_EQ(j["tokens_per_s"].get<double>(), 10.0);
  EXPECT_EQ(j["eta_s"], 70);  // 1 of 8 responses in 10 s: 7 more at 10 s each
  EXPECT_DOUBLE_EQ(j["tau"].get<double>(), 4.0);
}

TEST(ProgressMeterTest, TheCandidatesTauSoFarIsTheMeanOfItsResponsesAndStaysThroughLaterRuns) {
  const Clock::time_point t0{};
  ProgressMeter meter(2, 2, nullptr, t0);
  meter.start_run("candidate", t0);
  meter.response_done(10, 2.0, t0 + seconds(1));
  meter.response_done(10, 5.0, t0 + seconds(2));
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(meter.json_line())["tau"].get<double>(), 3.5);
  meter.start_run("reference", t0 + seconds(2));
  meter.response_done(30, 1.0, t0 + seconds(5));
  auto j = nlohmann::json::parse(meter.json_line());
  EXPECT_DOUBLE_EQ(j["tau"].get<double>(), 3.5) << "the reference's τ is not the candidate's";
  EXPECT_EQ(j["phase"], "reference");
  EXPECT_EQ(j["run"], 2);
  EXPECT_EQ(j["prompts_done"], 1);
  EXPECT_EQ(j["tokens"], 30);
  EXPECT_DOUBLE_EQ(j["tokens_per_s"].get<double>(), 10.0);
  EXPECT_EQ(j["eta_s"], 2);  // 3 of 4 in 5 s: one more at 5/3 s, rounded
}

TEST(ProgressMeterTest, BeforeAnyResponseThereIsNoEtaAndNoTau) {
  ProgressMeter meter(3, 1, nullptr);
  meter.start_run("candidate");
  auto j = nlohmann::json::parse(meter.json_line());
  EXPECT_FALSE(j.contains("eta_s"));
  EXPECT_FALSE(j.contains("tau"));
  EXPECT_EQ(j["prompts_done"], 0);
}

}  // namespace
}  // namespace ferry::eval
