// The parts of `ferry report` on their own: escaping, ticks, the step of a checkpoint,
// the report gathered from a real SQLite store written as a run would write it
// (attempts, a dropped host, two evals), the page's plots counted in its markup, and
// the metrics export. The page in a real browser is report_page_test.
#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

#include "orchestrator/report/html_escape.h"
#include "orchestrator/report/html_report.h"
#include "orchestrator/report/inputs_table.h"
#include "orchestrator/report/metrics_export.h"
#include "orchestrator/report/run_report.h"
#include "orchestrator/report/svg_chart.h"
#include "orchestrator/status_view.h"
#include "orchestrator/store.h"
#include "tests/support/process.h"
#include "tests/support/store_test.h"

namespace ferry {
namespace {

using nlohmann::json;

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t i = haystack.find(needle); i != std::string::npos; i = haystack.find(needle, i + 1)) ++n;
  return n;
}

TEST(HtmlEscapeTest, MarkupQuotesAndBadBytesCannotLeaveTheText) {
  EXPECT_EQ(report::html_escape("<script>alert(\"x\" & 'y')</script>"),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;");
  EXPECT_EQ(report::html_escape("τ → 2.5\n"), "τ → 2.5\n") << "valid UTF-8 stays";
  EXPECT_EQ(report::html_escape(std::string("a\xff"
                                            "b\x01"
                                            "c\xe2\x82",
                                            7)),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD"
            "c\xEF\xBF\xBD\xEF\xBF\xBD");
}

// F5..FF start no UTF-8 sequence (nor do C0, C1 and a lone continuation byte):
// each is replaced, and the bytes after it are judged on their own.
TEST(HtmlEscapeTest, LeadBytesF5ToFFAreReplaced) {
  const std::string kBad = "\xEF\xBF\xBD";
  for (int lead = 0xF5; lead <= 0xFF; ++lead) {
    SCOPED_TRACE(lead);
    std::string in = std::string(1, static_cast<char>(lead)) + "\x80\x80\x80";
    EXPECT_EQ(report::html_escape(in), kBad + kBad + kBad + kBad);
  }
  EXPECT_EQ(report::html_escape("\xC0\xAF\xC1\xBF\x80"), kBad + kBad + kBad + kBad + kBad);
  EXPECT_EQ(report::html_escape("\xF4\x8F\xBF\xBF"), "\xF4\x8F\xBF\xBF") << "U+10FFFF stays";
}

TEST(NiceTicksTest, RoundStepsCoverTheRange) {
  EXPECT_EQ(report::nice_ticks(0, 2.7, 5), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(report::nice_ticks(0, 1000, 4), (std::vector<double>{0, 500, 1000}));
  EXPECT_EQ(report::format_number(1500, "%g"), "1,500");
  EXPECT_EQ(report::format_number(-1234567, "%g"), "-1,234,567");
}

TEST(CheckpointStepTest, FromTheEventOrTheCheckpointFolderName) {
  EXPECT_EQ(report::checkpoint_step({{"step", 7}, {"drafter", "out/checkpoint-9"}}), 7);
  EXPECT_EQ(report::checkpoint_step({{"drafter", "out/checkpoint-1500"}}), 1500);
  EXPECT_EQ(report::checkpoint_step({{"drafter", "/runs/x/step_20/"}}), 20);
  EXPECT_EQ(report::checkpoint_step({{"drafter", "models/drafter"}}), std::nullopt);
  EXPECT_EQ(report::checkpoint_step({{"drafter", "checkpoint-12abc"}}), std::nullopt);
}

// An eval.report event as the engine writes it (jobs/eval/run/eval_report.cc), cut to
// what the report reads, with text a run could hold. Without a baseline run the
// speedup is 0, as reports before the field was left out wrote it.
json eval_event(const std::string& drafter, double tau, double ref_tau, bool baseline = true) {
  json e = {
      {"drafter", drafter},
      {"reference", "models/reference"},
      {"candidate", {{"tau", tau}, {"acceptance_histogram", {0, 5, 3, 1, 1}}, {"acceptance_rate", {1, 0.5, 0.2, 0.1}}}},
      {"reference_run",
       {{"tau", ref_tau},
        {"acceptance_histogram", {0, 2, 2, 3, 3}},
        {"acceptance_rate", {1, 0.8, 0.6, 0.3}},
        {"response_taus", {ref_tau}}}},
      {"speedup", baseline ? 1.7 : 0.0},
      {"ratio_to_reference", tau / ref_tau},
      {"gate_passed", true},
      {"gate_message", "all gates met"},
      {"block_size", 4},
      {"diff",
       {{"fields", {{{"name", "mask_token_id"}, {"candidate", "258"}, {"reference", "259"}, {"differs", true}}}},
        {"tensors", json::array()}}},
      {"responses",
       {{{"line", 1},
         {"tau", tau},
         {"text", "<b>hi</b>"},
         {"marked_text", "<b>\u27e6hi\u27e7</b>"},
         {"matches_baseline", true}}}}};
  if (baseline) e["baseline"] = {{"tau", 1.0}};
  return e;
}

class RunReportTest : public testing::TempStoreTest {
 protected:
  void SetUp() override {
    TempStoreTest::SetUp();
    if (HasFatalFailure()) return;
    auto run = store_->create_run("wf", "wf.yaml", "name: wf", {},
                                  {{"train", "command", "trainer"}, {"ship", "copy", ""}, {"eval", "eval", ""}});
    ASSERT_TRUE(run.ok());
    ASSERT_TRUE(store_->set_run_state("wf-1", RunState::kRunning, 1).ok());
    // train: attempt 1 loses its host for a while and fails, attempt 2 succeeds.
    ASSERT_TRUE(store_->begin_attempt("wf-1", "train", 1, "t1", "h").ok());
    ASSERT_TRUE(
        store_->add_event("wf-1", "train", "host.disconnected", {{"host", "trainer"}, {"why", "link <cut>"}}).ok());
    ASSERT_TRUE(store_->add_event("wf-1", "train", "host.reconnected", {{"host", "trainer"}}).ok());
    ASSERT_TRUE(store_->finish_attempt("wf-1", "train", 1, StageState::kFailed, 1, "exit 1 <oops>").ok());
    ASSERT_TRUE(store_->begin_attempt("wf-1", "train", 2, "t2", "h").ok());
    ASSERT_TRUE(store_->finish_attempt("wf-1", "train", 2, StageState::kSucceeded, 0, "").ok());
    ASSERT_TRUE(store_->begin_attempt("wf-1", "ship", 1, "s1", "h").ok());
    ASSERT_TRUE(
        store_->add_event("wf-1", "ship", "copy.started", {{"route", "relay"}, {"reason", "no link"}, {"files", 3}})
            .ok());
    ASSERT_TRUE(store_->set_metrics("wf-1", "ship", {{"bytes_sent", 4096}, {"mib_per_s", 12.5}}).ok());
    ASSERT_TRUE(store_->finish_attempt("wf-1", "ship", 1, StageState::kSucceeded, std::nullopt, "").ok());
    ASSERT_TRUE(store_->begin_attempt("wf-1", "eval", 1, "e1", "h").ok());
    ASSERT_TRUE(store_
                    ->add_event("wf-1", "eval", "copy.started",
                                {{"route", "relay"}, {"bytes", 2048}, {"files", 2}, {"checkpoint", "checkpoint-100"}})
                    .ok());
    ASSERT_TRUE(
        store_
            ->add_event(
                "wf-1", "eval", "copy.finished",
                {{"state", "succeeded"}, {"bytes_sent", 2048}, {"seconds", 0.5}, {"checkpoint", "checkpoint-100"}})
            .ok());
    // Recorded out of step order: the report puts them in order.
    ASSERT_TRUE(store_->add_event("wf-1", "eval", "eval.report", eval_event("ckpt/checkpoint-200", 2.5, 3.0)).ok());
    ASSERT_TRUE(store_->add_event("wf-1", "eval", "eval.report", eval_event("ckpt/checkpoint-100", 1.5, 3.0)).ok());
    ASSERT_TRUE(
        store_->add_event("wf-1", "eval", "eval.report", eval_event("ckpt/checkpoint-300", 2.9, 3.0, false)).ok());
    ASSERT_TRUE(store_->set_metrics("wf-1", "eval", {{"tau", 2.9}}).ok());
    ASSERT_TRUE(store_->finish_attempt("wf-1", "eval", 1, StageState::kSucceeded, std::nullopt, "").ok());
    ASSERT_TRUE(store_->set_run_state("wf-1", RunState::kSucceeded, 0).ok());
  }
  // A run of workflow `name` with one eval stage on evalhost, its first attempt under
  // way; its id ("" after a failed ASSERT).
  std::string run_with_a_running_eval(const std::string& name) {
    auto created = store_->create_run(name, name + ".yaml", "name: " + name, {}, {{"eval", "eval", "evalhost"}});
    EXPECT_TRUE(created.ok());
    if (!created.ok()) return "";
    EXPECT_TRUE(store_->set_run_state(created->id, RunState::kRunning, 1).ok());
    EXPECT_TRUE(store_->begin_attempt(created->id, "eval", 1, "e1", "evalhost").ok());
    return created->id;
  }
};

TEST_F(RunReportTest, GathersAttemptsDropsCopiesAndOneEvalPointPerCheckpoint) {
  auto r = report::collect_run_report(*store_, "last");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json& train = (*r)["run"]["stages"][0];
  ASSERT_EQ(train["attempts"].size(), 2u);
  EXPECT_EQ(train["attempts"][0]["state"], "failed");
  ASSERT_EQ(train["drops"].size(), 1u);
  EXPECT_EQ(train["drops"][0]["why"], "link <cut>");
  EXPECT_TRUE(train["drops"][0].contains("reconnected_ms"));
  ASSERT_EQ((*r)["copies"].size(), 2u) << "the copy stage and the watched checkpoint's copy";
  EXPECT_EQ((*r)["copies"][0]["route"], "relay");
  EXPECT_EQ((*r)["copies"][0]["bytes_sent"], 4096.0);
  EXPECT_EQ((*r)["copies"][1]["stage"], "eval · checkpoint-100");
  EXPECT_EQ((*r)["copies"][1]["mib_per_s"], 2048 / 0.5 / (1 << 20));
  const json& evals = (*r)["evals"];
  ASSERT_EQ(evals.size(), 3u);
  EXPECT_EQ(evals[0]["step"], 100);
  EXPECT_EQ(evals[1]["step"], 200);
  EXPECT_EQ(evals[2]["step"], 300);
  EXPECT_EQ(evals[0]["tau"], 1.5);
  EXPECT_EQ(evals[2]["reference_tau"], 3.0);
  EXPECT_EQ((*r)["eval"]["drafter"], "ckpt/checkpoint-300") << "the newest eval recorded";
}

TEST_F(RunReportTest, PageDrawsEveryPointAndEscapesWhatTheRunHolds) {
  auto r = report::collect_run_report(*store_, "wf-1");
  ASSERT_TRUE(r.ok());
  const std::string page = report::render_html_report(*r);
  EXPECT_EQ(count(page, "class=\"pt\" data-series=\"candidate\""), 3u + 4u) << "3 on the τ curve, 4 block positions";
  EXPECT_EQ(count(page, "class=\"pt\" data-series=\"reference\""), 3u + 4u);
  EXPECT_EQ(count(page, "class=\"bar\" data-series=\"candidate\""), 5u) << "acceptance lengths 0..4";
  EXPECT_EQ(count(page, "class=\"attempt\""), 4u) << "train twice, ship, eval";
  EXPECT_EQ(count(page, "class=\"drop\""), 1u);
  EXPECT_EQ(count(page, "class=\"evaluated\""), 3u) << "a tick per checkpoint evaluated";
  EXPECT_EQ(count(page, "<script"), 0u);
  EXPECT_EQ(count(page, "<b>"), 0u) << "model output is text, not markup";
  EXPECT_NE(page.find("&lt;b&gt;<mark>hi</mark>&lt;/b&gt;"), std::string::npos) << "accepted spans marked";
  EXPECT_NE(page.find("exit 1 &lt;oops&gt;"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos) << "no fetch allowed";
}

TEST_F(RunReportTest, MetricsExportHasStageMetricsAndTauPerStep) {
  auto r = report::collect_run_report(*store_, "wf-1");
  ASSERT_TRUE(r.ok());
  const std::string csv = report::metrics_csv(*r);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "run,stage,step,metric,value");
  EXPECT_NE(csv.find("\nwf-1,ship,,bytes_sent,4096\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nwf-1,eval,200,tau,2.5\n"), std::string::npos) << csv;
  // A checkpoint evaluated without a baseline has no speedup, here as in the JSON and the page.
  EXPECT_NE(csv.find("\nwf-1,eval,200,speedup,1.7\n"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("\nwf-1,eval,300,speedup"), std::string::npos) << csv;
  EXPECT_EQ((*r)["evals"][1]["speedup"], 1.7);
  EXPECT_TRUE((*r)["evals"][2]["speedup"].is_null()) << (*r)["evals"][2].dump();
  const std::string page = report::render_html_report(*r);
  EXPECT_NE(page.find(">1.70×<"), std::string::npos);
  EXPECT_EQ(page.find("0.00×"), std::string::npos) << "a speedup shown where no baseline ran";
  const std::string jsonl = report::metrics_jsonl(*r);
  size_t lines = count(jsonl, "\n");
  EXPECT_EQ(lines, count(csv, "\n") - 1) << "the same rows, less the header";
  auto first = json::parse(jsonl.substr(0, jsonl.find('\n')));
  EXPECT_EQ(first["run"], "wf-1");
}

// Metric names come from hosts: a cell a spreadsheet would run as a formula is
// text with a leading ' (and still quoted where RFC 4180 needs it).
TEST_F(RunReportTest, MetricsExportNeutralizesFormulaCells) {
  ASSERT_TRUE(store_->set_metrics("wf-1", "ship", {{"=HYPERLINK(\"http://x\",\"y\")", 1}, {"@SUM(A1)", 2},
                                                   {"+1", 3}, {"-1", 4}, {"plain", 5}}).ok());
  auto r = report::collect_run_report(*store_, "wf-1");
  ASSERT_TRUE(r.ok());
  const std::string csv = report::metrics_csv(*r);
  EXPECT_NE(csv.find("\nwf-1,ship,,\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",1\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nwf-1,ship,,'@SUM(A1),2\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nwf-1,ship,,'+1,3\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nwf-1,ship,,'-1,4\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nwf-1,ship,,plain,5\n"), std::string::npos) << csv;
}

// A stored eval whose fields have other types is shown, not thrown: it counts as
// an eval without a verdict (failed), its odd parts as empty.
TEST_F(RunReportTest, AMalformedStoredEvalIsShownAsFailedNotThrown) {
  ASSERT_TRUE(store_->add_event("wf-1", "eval", "eval.report",
                                {{"attempt", "one"}, {"drafter", 7}, {"candidate", "x"}, {"gate_passed", 1},
                                 {"reference_run", {{"response_taus", 5}, {"tau", "2"}}},
                                 {"diff", {{"fields", {1, "a"}}, {"tensors", json::object()}}}, {"responses", "many"}})
                  .ok());
  auto r = report::collect_run_report(*store_, "wf-1");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)["evals"].size(), 4u);
  EXPECT_EQ((*r)["evals"][3]["gate_passed"], false) << "no boolean verdict is no pass";
  EXPECT_TRUE((*r)["evals"][3]["tau"].is_null()) << (*r)["evals"][3].dump();
  // Read as the engine's type: the first field of a wrong type is named.
  EXPECT_EQ((*r)["evals"][3]["unreadable"], "the eval report's drafter is a number, not a string")
      << (*r)["evals"][3].dump();
  std::string page;
  EXPECT_NO_THROW(page = report::render_html_report(*r));
  EXPECT_NE(page.find("gate-fail"), std::string::npos);
  EXPECT_NE(page.find("the newest eval&#39;s report cannot be read: the eval report&#39;s drafter is a number"),
            std::string::npos)
      << page;
}

// A long eval still decoding: `ferry status` and `ferry report` show how far it is
// and the candidate's τ so far, from the progress its worker reported (stored, so a
// coordinator restarted mid-eval shows it too).
TEST_F(RunReportTest, AnEvalStillDecodingShowsItsPromptsAndItsTauSoFar) {
  const std::string id = run_with_a_running_eval("long");
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(store_->set_progress(id, "eval",
                                   {{"kind", "eval"}, {"phase", "candidate"}, {"run", 1}, {"runs", 2},
                                    {"prompts_done", 12}, {"prompts_total", 60}, {"tokens", 1536},
                                    {"tokens_per_s", 1.5}, {"eta_s", 5400}, {"tau", 3.25}})
                  .ok());
  auto r = report::collect_run_report(*store_, id);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)["running_evals"].size(), 1u) << (*r)["running_evals"].dump();
  const json& row = (*r)["running_evals"][0];
  EXPECT_EQ(row["stage"], "eval");
  EXPECT_EQ(row["prompts_done"], 12);
  EXPECT_EQ(row["prompts_total"], 60);
  EXPECT_EQ(row["tau_so_far"], 3.25);
  const std::string page = report::render_html_report(*r);
  EXPECT_NE(page.find("candidate 12 of 60 prompts (run 1 of 2), τ so far 3.250 (partial)"), std::string::npos);
  auto run = store_->find_run(id);
  auto stages = store_->stages(id);
  ASSERT_TRUE(run.ok() && stages.ok());
  const std::string table = render_status(*run, *stages, store_->path(), false);
  EXPECT_NE(table.find("candidate 12/60 prompts (run 1 of 2), 1.5 tok/s, τ so far 3.25, ETA 1h30m"), std::string::npos)
      << table;
  // The baseline's run: the candidate's τ is final by then, and said so.
  ASSERT_TRUE(store_
                  ->set_progress(id, "eval",
                                 {{"kind", "eval"},
                                  {"phase", "baseline"},
                                  {"run", 2},
                                  {"runs", 2},
                                  {"prompts_done", 5},
                                  {"prompts_total", 60},
                                  {"tokens_per_s", 3.0},
                                  {"tau", 3.5}})
                  .ok());
  r = report::collect_run_report(*store_, id);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(report::render_html_report(*r).find("baseline 5 of 60 prompts (run 2 of 2), candidate τ 3.500</p>"),
            std::string::npos);
  stages = store_->stages(id);
  ASSERT_TRUE(stages.ok());
  const std::string later = render_status(*run, *stages, store_->path(), false);
  EXPECT_NE(later.find("baseline 5/60 prompts (run 2 of 2), 3.0 tok/s, candidate τ 3.50"), std::string::npos) << later;
}

// A watch (issue 41): each checkpoint's report defers its gate, and the stage judges
// its last one, recording the verdict (eval.gate) and gate_passed among its metrics.
// The newest eval of the report, the page and the metrics carry that one verdict, and
// each checkpoint's row says where it is judged, before the verdict and after.
TEST_F(RunReportTest, AWatchsVerdictOnItsLastCheckpointIsTheOneTheReportPageAndMetricsShow) {
  const std::string id = run_with_a_running_eval("watch");
  ASSERT_FALSE(id.empty());
  for (int step : {100, 200}) {
    json ev = eval_event("ckpt/checkpoint-" + std::to_string(step), step == 100 ? 1.0 : 1.2, 1.0);
    ev["checkpoint"] = "checkpoint-" + std::to_string(step);
    ev["gate_deferred"] = "judged on the last checkpoint";  // as the engine writes a watch's checkpoint
    ev["gate_message"] = "";
    ASSERT_TRUE(store_->add_event(id, "eval", "eval.report", ev).ok());
  }
  auto running = report::collect_run_report(*store_, id);
  ASSERT_TRUE(running.ok()) << running.status().message();
  std::string page = report::render_html_report(*running);
  EXPECT_NE(page.find("<p>gate: judged on the last checkpoint</p>"), std::string::npos) << "not judged yet";
  EXPECT_EQ(count(page, "class=\"gate-"), 0u) << "no verdict before the stage's";

  const std::string message = "checkpoint-200 (the last checkpoint): tau 1.2 < min_tau 1.5";
  ASSERT_TRUE(store_
                  ->add_event(id, "eval", "eval.gate",
                              {{"checkpoint", "checkpoint-200"}, {"gate_passed", false}, {"gate_message", message}})
                  .ok());
  ASSERT_TRUE(store_->set_metrics(id, "eval", {{"tau", 1.2}, {"gate_passed", 0}}).ok());
  ASSERT_TRUE(store_->finish_attempt(id, "eval", 1, StageState::kFailed, std::nullopt, "gate failed: " + message).ok());
  auto r = report::collect_run_report(*store_, id);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)["eval"]["checkpoint"], "checkpoint-200");
  EXPECT_EQ((*r)["eval"]["gate_passed"], false);
  EXPECT_EQ((*r)["eval"]["gate_message"], message);
  EXPECT_FALSE((*r)["eval"].contains("gate_deferred"));
  ASSERT_EQ((*r)["evals"].size(), 2u);
  for (const auto& p : (*r)["evals"]) {
    EXPECT_EQ(p["gate"], "judged on the last checkpoint") << p.dump();
    EXPECT_TRUE(p["gate_passed"].is_null()) << p.dump();
  }
  page = report::render_html_report(*r);
  EXPECT_NE(page.find("<p>gate: <span class=\"gate-fail\">FAILED</span> — checkpoint-200 (the last checkpoint): "
                      "tau 1.2 &lt; min_tau 1.5</p>"),
            std::string::npos)
      << page;
  EXPECT_EQ(count(page, "class=\"gate-pass\""), 0u);
  EXPECT_EQ(count(page, "<td>judged on the last checkpoint</td>"), 2u);
  EXPECT_EQ(count(page, "<td>passed</td>"), 0u);
  EXPECT_NE(report::metrics_csv(*r).find("\n" + id + ",eval,,gate_passed,0\n"), std::string::npos)
      << report::metrics_csv(*r);
}

TEST_F(RunReportTest, ThePageNamesTheSamplingRegimeAndTheCounts) {
  const std::string id = run_with_a_running_eval("sampled");
  ASSERT_FALSE(id.empty());
  json ev = eval_event("ckpt/checkpoint-100", 2.5, 3.0);
  ev["temperature"] = 1.0;
  ev["seed"] = 7;
  ev["candidate"]["drafted_tokens"] = 30;
  ev["candidate"]["accepted_tokens"] = 12;
  ev["candidate"]["overall_acceptance_rate"] = 0.4;
  ev["candidate"]["tau_spread"] = json{{"sd", 0.5}, {"p10", 1.5}, {"p50", 2.5}, {"p90", 3.25}, {"ci95_low", 2.0}};
  ev["candidate"]["tau_spread"]["ci95_high"] = 3.0;
  ASSERT_TRUE(store_->add_event(id, "eval", "eval.report", ev).ok());
  auto r = report::collect_run_report(*store_, id);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string page = report::render_html_report(*r);
  EXPECT_NE(page.find(", decoding T = 1.0, seed 7</p>"), std::string::npos) << page;
  EXPECT_NE(page.find("drafted 30 tokens, accepted 12 (acceptance rate 0.400); τ across responses: sd 0.500, p10 "
                      "1.500, p50 2.500, p90 3.250, 95 % bootstrap interval 2.000–3.000"),
            std::string::npos)
      << page;
  ev.erase("temperature");  // a greedy eval (and one written before sampling existed)
  ASSERT_TRUE(store_->add_event(id, "eval", "eval.report", ev).ok());
  r = report::collect_run_report(*store_, id);
  ASSERT_TRUE(r.ok());
  page = report::render_html_report(*r);
  EXPECT_NE(page.find(", decoding greedy</p>"), std::string::npos) << page;
}

TEST_F(RunReportTest, ThePageListsTheNewestEvalsInputsByContent) {
  const std::string id = run_with_a_running_eval("inputs");
  ASSERT_FALSE(id.empty());
  json ev = eval_event("ckpt/checkpoint-100", 2.5, 3.0);
  ev["fingerprints"] = {{{"what", "target"}, {"digest", "0f1e2d3c4b5a69788796a5b4c3d2e1f0"}},
                        {{"what", "drafter"}, {"digest", "<d>"}, {"copy_manifest", "m-1"}}};
  ASSERT_TRUE(store_->add_event(id, "eval", "eval.report", ev).ok());
  auto r = report::collect_run_report(*store_, id);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const std::string page = report::render_html_report(*r);
  EXPECT_EQ(count(page, "<tr class=\"input\">"), 2u) << page;
  EXPECT_NE(page.find("<td>target</td><td><code>0f1e2d3c4b5a69788796a5b4c3d2e1f0</code></td>"), std::string::npos)
      << page;
  EXPECT_NE(page.find("<code>&lt;d&gt;</code><br><span class=\"sub\">copy manifest <code>m-1</code>"),
            std::string::npos)
      << "escaped, with the copy's manifest";
}

// Runs as compare_report gathers them, cut to what compare_inputs reads.
json run_with_inputs(const std::string& id, const json& fingerprints) {
  json run = {{"run", {{"id", id}}}};
  if (!fingerprints.is_null()) run["eval"] = {{"fingerprints", fingerprints}};
  return run;
}

json fp(const std::string& what, const std::string& digest, const std::string& manifest = "") {
  json f = {{"what", what}, {"digest", digest}};
  if (!manifest.empty()) f["copy_manifest"] = manifest;
  return f;
}

TEST(CompareInputsTest, AnInputIsTheSameOnlyWhenEveryRunReadItWithOneDigestAndOneCopy) {
  const json runs = {
      run_with_inputs("a-1", {fp("target", "T"), fp("drafter", "D1"), fp("prompts", "P", "m1")}),
      run_with_inputs("b-2", {fp("target", "T"), fp("drafter", "D2"), fp("prompts", "P", "m2"), fp("tokenizer", "K")}),
      run_with_inputs("c-3", {fp("target", "T"), fp("drafter", "D1"), fp("prompts", "P")})};
  const json rows = report::compare_inputs(runs);
  ASSERT_EQ(rows.size(), 4u) << rows.dump(2);
  std::map<std::string, bool> same;
  for (const auto& row : rows) same[row["what"]] = row["same"];
  EXPECT_TRUE(same["target"]);
  EXPECT_FALSE(same["drafter"]) << "b read another drafter";
  EXPECT_FALSE(same["prompts"]) << "one digest, but two copies whose manifests differ";
  EXPECT_FALSE(same["tokenizer"]) << "only b read one";
  EXPECT_EQ(rows[3]["what"], "tokenizer") << "in the order first seen";
  EXPECT_EQ(rows[3]["runs"][0], json({{"run", "a-1"}, {"recorded", true}}));
  EXPECT_EQ(rows[3]["verdict"], "differs") << "a-1 recorded its inputs, and no tokenizer among them";
  EXPECT_EQ(rows[0]["verdict"], "same");
  EXPECT_EQ(rows[3]["runs"][1]["digest"], "K");

  const std::string table = report::inputs_compare_html(rows);
  EXPECT_EQ(count(table, "<tr class=\"input-same\">"), 1u) << table;
  EXPECT_EQ(count(table, "<tr class=\"input-differs differs\">"), 3u) << table;
  EXPECT_EQ(count(table, "<td>not read</td>"), 2u) << table;
  EXPECT_NE(table.find("<th>a-1</th><th>b-2</th><th>c-3</th>"), std::string::npos) << table;

  const json one_copy = {run_with_inputs("a-1", json::array({fp("drafter", "D", "m")})),
                         run_with_inputs("b-2", json::array({fp("drafter", "D")})), run_with_inputs("c-3", json())};
  const json rows2 = report::compare_inputs(one_copy);
  ASSERT_EQ(rows2.size(), 1u);
  EXPECT_FALSE(rows2[0]["same"]) << "c-3 has no eval";
  EXPECT_EQ(rows2[0]["verdict"], "unknown") << "a run that recorded nothing is no evidence either way";
  EXPECT_EQ(rows2[0]["runs"][2], json({{"run", "c-3"}, {"recorded", false}}));
  const std::string unknown = report::inputs_compare_html(rows2);
  EXPECT_EQ(count(unknown, "<tr class=\"input-unknown\">"), 1u) << unknown;
  EXPECT_EQ(count(unknown, "<td>not recorded (no eval, or one older than fingerprints)</td>"), 1u) << unknown;
  EXPECT_TRUE(report::compare_inputs(json::array({one_copy[0], one_copy[1]}))[0]["same"])
      << "a manifest on one side only: the digest decides";
  EXPECT_EQ(
      report::compare_inputs(json::array({run_with_inputs("x-1", json()), run_with_inputs("y-2", {{"bad", true}})})),
      json::array())
      << "no eval, or one that cannot be read: no rows";
}

TEST_F(RunReportTest, UnknownRunIsNotFound) {
  auto r = report::collect_run_report(*store_, "wf-9");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ferry
