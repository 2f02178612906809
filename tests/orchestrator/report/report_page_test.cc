// `ferry report` on a real run, opened in a real browser: local hosts, a "trainer"
// stage that writes two checkpoints (the engine's deterministic tiny drafters,
// ferry-tiny-models), a copy, an eval of each checkpoint, then the page in headless
// Chromium (open_in_chromium.mjs, DevTools protocol): no console error, no network
// request, every plot drawn with the points the run has, and a screenshot written
// beside the test's output (report_page.png in the test's build folder).
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"
#include "tests/support/tiny_suite_test.h"

namespace ferry {
namespace {

using testing::read_text;
using testing::write_text;

class ReportPageTest : public testing::TinySuiteTest {
 protected:
  ReportPageTest() : TinySuiteTest(300) {}
  void SetUp() override {
    TinySuiteTest::SetUp();
    block_size_ = block_size();
    std::ifstream prompts(suite_.file("oracle-prompts.jsonl"));
    for (std::string line; std::getline(prompts, line);) prompt_count_ += line.empty() ? 0 : 1;
  }
  std::string eval_stage(const std::string& name, const std::string& needs, int step) {
    return "  " + name + ":\n    kind: eval\n    needs: " + needs + "\n    target: " + suite_.file("oracle-target") +
           "\n    drafter: " + suite_.file("ckpt/checkpoint-" + std::to_string(step)) + "\n    reference: " +
           suite_.file("oracle-disagree") + "\n    prompts: " + suite_.file("oracle-prompts.jsonl") +
           "\n    max_new_tokens: 16\n    threads: 1\n";
  }
  int block_size_ = 0;
  int prompt_count_ = 0;
};

TEST_F(ReportPageTest, PageOpensOfflineInChromiumWithEveryPlotDrawn) {
  // Step 100 is the drafter that is never accepted, step 200 the one always accepted.
  const std::string wf = suite_.file("wf.yaml");
  write_text(wf, "name: reportpage\nhosts:\n  trainer:\n    transport: local\n  evaluator:\n    transport: local\n"
                 "stages:\n  train:\n    host: trainer\n    run: |\n      mkdir -p " + suite_.file("ckpt") +
                 "\n      cp -r " + suite_.file("oracle-disagree") + " " + suite_.file("ckpt/checkpoint-100") +
                 "\n      cp -r " + suite_.file("oracle-agree") + " " + suite_.file("ckpt/checkpoint-200") +
                 "\n  ship:\n    kind: copy\n    needs: train\n    from: trainer:" + suite_.file("ckpt") +
                 "\n    to: evaluator:ckpt\n" + eval_stage("eval_100", "ship", 100) +
                 eval_stage("eval_200", "eval_100", 200));
  auto run = ferry({"run", wf});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;

  const std::string page = std::string(FERRY_TEST_OUTPUT_DIR) + "/report_page.html";
  const std::string shot = std::string(FERRY_TEST_OUTPUT_DIR) + "/report_page.png";
  std::remove(shot.c_str());
  auto rep = ferry({"report", "reportpage-1", "-o", page});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_EQ(rep.out, page + "\n");

  const std::vector<std::string> selectors = {
      "#tau-curve circle.pt[data-series=candidate]", "#tau-curve circle.pt[data-series=reference]",
      "#acceptance-histogram rect.bar[data-series=candidate]", "#acceptance-histogram rect.bar[data-series=reference]",
      "#acceptance-by-position circle.pt[data-series=candidate]", "#timeline rect.attempt", "tr.response",
      "tr.checkpoint", "script", "mark"};
  std::vector<std::string> argv = {"node", FERRY_OPEN_IN_CHROMIUM, page, shot};
  argv.insert(argv.end(), selectors.begin(), selectors.end());
  auto browser = testing::run_process(argv, {}, 120);
  ASSERT_EQ(browser.exit_code, 0) << browser.out << browser.err;
  auto seen = nlohmann::json::parse(browser.out);
  EXPECT_TRUE(seen["errors"].empty()) << seen["errors"].dump(2);
  EXPECT_TRUE(seen["requests"].empty()) << seen["requests"].dump(2);
  EXPECT_EQ(seen["title"], "ferry report reportpage-1");
  const auto& n = seen["counts"];
  EXPECT_EQ(n[selectors[0]], 2) << "one τ point per checkpoint";
  EXPECT_EQ(n[selectors[1]], 2);
  EXPECT_EQ(n[selectors[2]], block_size_ + 1) << "acceptance lengths 0..B";
  EXPECT_EQ(n[selectors[3]], block_size_ + 1);
  EXPECT_EQ(n[selectors[4]], block_size_) << "one point per block position";
  EXPECT_EQ(n[selectors[5]], 4) << "one bar per attempt of each stage";
  EXPECT_EQ(n[selectors[6]], prompt_count_);
  EXPECT_EQ(n[selectors[7]], 2);
  EXPECT_EQ(n[selectors[8]], 0) << "the page runs no script";
  EXPECT_GT(n[selectors[9]], 0) << "the agreeing drafter's accepted spans are marked";
  ASSERT_TRUE(testing::exists(shot));
  EXPECT_GT(read_text(shot).size(), 10000u) << "a screenshot of a drawn page";

  // The data behind the page: the checkpoints in step order, with the agreeing one ahead.
  auto json = nlohmann::json::parse(ferry({"report", "reportpage-1", "--json"}).out);
  ASSERT_EQ(json["evals"].size(), 2u);
  EXPECT_EQ(json["evals"][0]["step"], 100);
  EXPECT_EQ(json["evals"][1]["step"], 200);
  EXPECT_DOUBLE_EQ(json["evals"][0]["tau"].get<double>(), 1.0);  // never accepted
  EXPECT_GT(json["evals"][1]["tau"].get<double>(), 1.5);
  EXPECT_EQ(json["copies"][0]["stage"], "ship");
  EXPECT_GT(json["copies"][0]["bytes_sent"].get<double>(), 0);
}

// The elements `selectors` match on `page` in headless Chromium (no console error, no
// request past the page itself), and the screenshot beside the test's output.
nlohmann::json open_page(const std::string& page, const std::string& shot, const std::vector<std::string>& selectors) {
  std::vector<std::string> argv = {"node", FERRY_OPEN_IN_CHROMIUM, page, shot};
  argv.insert(argv.end(), selectors.begin(), selectors.end());
  auto browser = testing::run_process(argv, {}, 120);
  EXPECT_EQ(browser.exit_code, 0) << browser.out << browser.err;
  auto seen = nlohmann::json::parse(browser.out, nullptr, false);
  if (!seen.is_object()) return nlohmann::json::object();
  EXPECT_TRUE(seen["errors"].empty()) << seen["errors"].dump(2);
  EXPECT_TRUE(seen["requests"].empty()) << seen["requests"].dump(2);
  return seen["counts"];
}

// Issue 43: `ferry report A B` of two watch runs — the broken run's checkpoints never
// agree with the target, the fixed run's last one always does — on one page: both τ
// curves (and each run's reference and per-dataset curves) on one chart, each run's
// dataset table, the diff between their last checkpoints. Each eval decodes two named
// datasets (`prompts:` as a map), so each run's own page plots τ per step per dataset.
TEST_F(ReportPageTest, TwoWatchRunsSideBySideWithBothCurvesInChromium) {
  const std::string second = suite_.file("code-prompts.jsonl");
  auto made = testing::run_process({testing::bin_dir() + "/ferry-tiny-models", "prompts", "--out", second, "--count",
                                    "5", "--vocab", "63", "--min-len", "4", "--max-len", "24", "--seed", "9"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto watch_run = [&](const std::string& name, const std::string& last_drafter) {
    const std::string dir = work_.file(name);
    const std::string wf = work_.file(name + ".yaml");
    write_text(wf, "name: " + name + "\nhosts:\n  trainer: {transport: local, workdir: " + dir +
                       "/trainer}\n  evaluator: {transport: local, workdir: " + dir +
                       "/evaluator}\nstages:\n  train:\n    host: trainer\n    run: |\n      CK=" + dir +
                       "/trainer/ckpt\n      ck() { mkdir -p \"$CK/checkpoint-$1\"; echo $1 > \"$CK/checkpoint-$1/step.txt\";"
                       " cp " + suite_.path() + "/$2/* \"$CK/checkpoint-$1/\"; }\n      ck 100 oracle-disagree\n      ck 200 " +
                       last_drafter + "\n  eval:\n    kind: eval\n    host: evaluator\n    watch: {stage: train, from: "
                       "trainer:ckpt}\n    drafter: checkpoints\n    target: " + suite_.file("oracle-target") +
                       "\n    reference: " + suite_.file("oracle-disagree") + "\n    prompts:\n      gsm8k: " +
                       suite_.file("oracle-prompts.jsonl") + "\n      humaneval: " + second +
                       "\n    max_new_tokens: 16\n    threads: 1\n");
    auto run = ferry({"run", wf});
    EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  };
  watch_run("broken", "oracle-disagree");
  watch_run("fixed", "oracle-agree");  // run numbers count across the database: fixed-2

  const std::string page = std::string(FERRY_TEST_OUTPUT_DIR) + "/report_compare.html";
  auto rep = ferry({"report", "broken-1", "fixed-2", "-o", page});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_EQ(rep.out, page + "\n");
  const std::vector<std::string> selectors = {"#tau-curves circle.pt[data-series='broken-1']",
                                              "#tau-curves circle.pt[data-series='fixed-2']",
                                              "#tau-curves circle.pt[data-series='fixed-2 reference']",
                                              "#tau-curves circle.pt[data-series='fixed-2 gsm8k']",
                                              "#tau-curves circle.pt[data-series='broken-1 humaneval']",
                                              "#datasets-broken-1 th.dataset",
                                              "#datasets-fixed-2 th.dataset",
                                              "tr.run",
                                              "tr.differs",
                                              ".diff-unavailable",
                                              "script",
                                              "#inputs-compare tr.input-same",
                                              "#inputs-compare tr.input-differs"};
  auto n = open_page(page, std::string(FERRY_TEST_OUTPUT_DIR) + "/report_compare.png", selectors);
  EXPECT_EQ(n[selectors[0]], 2) << "the broken run's curve: one point per checkpoint";
  EXPECT_EQ(n[selectors[1]], 2) << "the fixed run's curve";
  EXPECT_EQ(n[selectors[2]], 2);
  EXPECT_EQ(n[selectors[3]], 2);
  EXPECT_EQ(n[selectors[4]], 2);
  EXPECT_EQ(n[selectors[5]], 2) << "a column per dataset";
  EXPECT_EQ(n[selectors[6]], 2);
  EXPECT_EQ(n[selectors[7]], 2);
  EXPECT_GT(n[selectors[8]], 0) << "the last checkpoints differ (the agreeing drafter's norm)";
  EXPECT_EQ(n[selectors[9]], 0) << "both checkpoints are on this machine";
  EXPECT_EQ(n[selectors[10]], 0) << "the page runs no script";
  EXPECT_EQ(n[selectors[11]], 4) << "the target, the reference and both datasets: the same files in both runs";
  EXPECT_EQ(n[selectors[12]], 1) << "the last checkpoints: the disagreeing drafter, then the agreeing one";

  auto json = nlohmann::json::parse(ferry({"report", "broken-1", "fixed-2", "--json"}).out);
  ASSERT_EQ(json["runs"].size(), 2u);
  EXPECT_EQ(json["format"], "ferry-compare/1");
  EXPECT_DOUBLE_EQ(json["runs"][0]["evals"][1]["tau"].get<double>(), 1.0);  // never accepted
  EXPECT_GT(json["runs"][1]["evals"][1]["tau"].get<double>(), 1.5);
  ASSERT_EQ(json["runs"][1]["evals"][1]["datasets"].size(), 2u);
  EXPECT_EQ(json["runs"][1]["evals"][1]["datasets"][1]["name"], "humaneval");
  ASSERT_TRUE(json["diffs"][0].contains("diff")) << json["diffs"].dump(2);
  EXPECT_GT(json["diffs"][0]["diff"]["tensors"].size(), 0u);
  std::map<std::string, bool> same;
  for (const auto& row : json["inputs"]) same[row["what"]] = row["same"];
  EXPECT_EQ(same, (std::map<std::string, bool>{{"target", true},
                                               {"drafter", false},
                                               {"reference", true},
                                               {"dataset gsm8k", true},
                                               {"dataset humaneval", true}}))
      << json["inputs"].dump(2);

  // One run's page, as before, and its τ per step per dataset.
  const std::string one = std::string(FERRY_TEST_OUTPUT_DIR) + "/report_datasets.html";
  ASSERT_EQ(ferry({"report", "fixed-2", "-o", one}).exit_code, 0);
  const std::vector<std::string> own = {
      "#tau-per-dataset circle.pt[data-series=gsm8k]", "#tau-per-dataset circle.pt[data-series=humaneval]",
      "#tau-curve circle.pt[data-series=candidate]", "#datasets th.dataset", "#inputs tr.input"};
  auto m = open_page(one, std::string(FERRY_TEST_OUTPUT_DIR) + "/report_datasets.png", own);
  EXPECT_EQ(m[own[0]], 2);
  EXPECT_EQ(m[own[1]], 2);
  EXPECT_EQ(m[own[2]], 2);
  EXPECT_EQ(m[own[3]], 2);
  EXPECT_EQ(m[own[4]], 5) << "the newest eval's inputs by content";
}

}  // namespace
}  // namespace ferry
