// An eval's JSON progress line, as the engine writes it (jobs/eval/run/progress_meter.h)
// and as a host's log may hold it instead: only the known fields of their types and
// ranges become the stage's progress; anything else is no progress at all.
#include "jobs/eval/stage/eval_progress_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace ferry {
namespace {

const char kLine[] = R"(progress {"phase":"candidate","run":1,"runs":3,"prompts_done":4,"prompts_total":20,)"
                     R"("tokens":512,"tokens_per_s":35.5,"eta_s":310,"tau":4.25})";

TEST(EvalProgressReaderTest, TheEnginesLineBecomesTheStagesProgress) {
  auto p = read_eval_progress(kLine);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)["kind"], "eval");
  EXPECT_EQ((*p)["phase"], "candidate");
  EXPECT_EQ((*p)["prompts_done"], 4);
  EXPECT_EQ((*p)["prompts_total"], 20);
  EXPECT_EQ((*p)["run"], 1);
  EXPECT_EQ((*p)["runs"], 3);
  EXPECT_EQ((*p)["tokens"], 512);
  EXPECT_DOUBLE_EQ((*p)["tokens_per_s"].get<double>(), 35.5);
  EXPECT_DOUBLE_EQ((*p)["eta_s"].get<double>(), 310);
  EXPECT_DOUBLE_EQ((*p)["tau"].get<double>(), 4.25);
}

TEST(EvalProgressReaderTest, UnknownFieldsAreDroppedAndOptionalOnesMayBeAbsent) {
  auto p = read_eval_progress(
      R"(progress {"phase":"baseline","run":3,"runs":3,"prompts_done":0,"prompts_total":2,"tokens":0,)"
      R"("tokens_per_s":0,"cmd":"rm -rf /"})");
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->contains("cmd"));
  EXPECT_FALSE(p->contains("tau"));
  EXPECT_FALSE(p->contains("eta_s"));
}

TEST(EvalProgressReaderTest, ALineThatIsNotOursIsNoProgress) {
  for (const std::string& text : {
           std::string("candidate: response 3/20: 128 tokens, tau 4.2"),  // a note for people
           std::string("progress "),
           std::string("progress {"),
           std::string("progress [1,2]"),
           std::string("progress \"candidate\""),
           std::string(R"(progress {"phase":"other","run":1,"runs":1,"prompts_done":1,"prompts_total":1,)"
                       R"("tokens":1,"tokens_per_s":1})"),
           std::string(R"(progress {"phase":"candidate","run":1,"runs":1,"prompts_done":"1","prompts_total":1,)"
                       R"("tokens":1,"tokens_per_s":1})"),
           std::string(R"(progress {"phase":"candidate","run":1,"runs":1,"prompts_done":-1,"prompts_total":1,)"
                       R"("tokens":1,"tokens_per_s":1})"),
           std::string(R"(progress {"phase":"candidate","run":1,"runs":1,"prompts_done":5,"prompts_total":4,)"
                       R"("tokens":1,"tokens_per_s":1})"),
           std::string(R"(progress {"phase":"candidate","run":2,"runs":1,"prompts_done":1,"prompts_total":4,)"
                       R"("tokens":1,"tokens_per_s":1})"),
           std::string(R"(progress {"phase":"candidate","run":1,"runs":1,"prompts_done":1,"prompts_total":4,)"
                       R"("tokens":1,"tokens_per_s":1e300})"),
           std::string(R"(progress {"phase":"candidate","run":1,"runs":1,"prompts_done":1,"prompts_total":4,)"
                       R"("tokens":1,"tokens_per_s":1,"tau":{"x":1}})"),
           std::string(R"(progress {"phase":"candidate","run":1,"runs":1,"prompts_done":1,"prompts_total":4})"),
           std::string("progress ") + std::string(5000, '{'),
       }) {
    EXPECT_FALSE(read_eval_progress(text).has_value()) << text.substr(0, 200);
  }
}

}  // namespace
}  // namespace ferry
