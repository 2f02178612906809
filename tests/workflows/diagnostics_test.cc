// Diagnostics (the collected `file:line:col: message` list) and did_you_mean.
#include "workflows/diagnostics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ferry::workflow {
namespace {

const std::vector<std::string> kStageKeys = {"kind",    "host",          "needs",    "env",         "outputs",
                                             "timeout", "retries",       "retry_on", "description", "run",
                                             "cwd",     "retry_backoff"};

TEST(DidYouMeanTest, SuggestsTheClosestCandidate) {
  EXPECT_EQ(did_you_mean("rnu", kStageKeys), "run");  // a swap is one edit, so not 'env'
  EXPECT_EQ(did_you_mean("nedes", kStageKeys), "needs");
  EXPECT_EQ(did_you_mean("timout", kStageKeys), "timeout");
  EXPECT_EQ(did_you_mean("output", kStageKeys), "outputs");
  EXPECT_EQ(did_you_mean("descripton", kStageKeys), "description");
  EXPECT_EQ(did_you_mean("hots", kStageKeys), "host");
  EXPECT_EQ(did_you_mean("biuld", {"build", "test"}), "build");
  EXPECT_EQ(did_you_mean("gpu2", {"laptop", "gpu"}), "gpu");
}

TEST(DidYouMeanTest, SuggestsNothingForFarWords) {
  EXPECT_EQ(did_you_mean("completely_different", kStageKeys), "");
  EXPECT_EQ(did_you_mean("xyz", {"abc"}), "");
  EXPECT_EQ(did_you_mean("retries", {}), "");
  EXPECT_EQ(did_you_mean("gpu", {"laptop"}), "");
}

TEST(DidYouMeanTest, ShortWordsNeedSomethingInCommon) {
  // Within the edit budget, but every letter would change.
  EXPECT_EQ(did_you_mean("zz", {"b"}), "");
  EXPECT_EQ(did_you_mean("x", {"y"}), "");
  EXPECT_EQ(did_you_mean("ab", {"cd"}), "");
  EXPECT_EQ(did_you_mean("ab", {"b"}), "b");
  EXPECT_EQ(did_you_mean("gpu", {"cpu"}), "cpu");
}

TEST(DidYouMeanTest, AllowsMoreEditsForLongerWords) {
  // Short words: at most 2 edits. Long ones: about a third of their length.
  EXPECT_EQ(did_you_mean("ab", {"abcd"}), "abcd");
  EXPECT_EQ(did_you_mean("ab", {"abcde"}), "");
  EXPECT_EQ(did_you_mean("abc", {"abcdef"}), "");
  EXPECT_EQ(did_you_mean("rettry_bckof", {"retry_backoff"}), "retry_backoff");  // 3 edits in 12 letters
}

TEST(DiagnosticsTest, ToStringSortsByPlace) {
  Diagnostics d("wf.yaml");
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.to_string(), "");
  d.error({12, 5}, "second");
  d.error({3, 9}, "first");
  d.error({12, 1}, "between");
  EXPECT_EQ(d.size(), 3u);
  EXPECT_EQ(d.file(), "wf.yaml");
  EXPECT_EQ(d.to_string(), "wf.yaml:3:9: first\nwf.yaml:12:1: between\nwf.yaml:12:5: second\n");
  EXPECT_EQ(d.list()[0].message, "second");  // list() keeps the order found
}

}  // namespace
}  // namespace ferry::workflow
