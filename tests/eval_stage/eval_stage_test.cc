// The eval stage end to end: `ferry run` loads the eval plugin, runs the engine on
// a worker thread, records τ as metrics and outputs, appends the report to the
// stage's log, and fails the stage when the gate says so. The models are the
// engine's own deterministic tiny ones (ferry-tiny-models), made by the test.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::read_text;
using testing::write_text;

class EvalStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The engine's own suite: an oracle target whose greedy next token is known,
    // a drafter that always agrees with it (τ = B on every step) and one that
    // never does (τ = 1).
    auto r = testing::run_process({testing::bin_dir() + "/ferry-tiny-models", "suite", "--out", dir_.path()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    block_size_ = nlohmann::json::parse(read_text(dir_.file("oracle-agree/config.json")))["block_size"].get<int>();
  }
  testing::ProcessResult ferry(std::vector<std::string> args) {
    args.insert(args.begin(), testing::bin_dir() + "/ferry");
    return testing::run_process(args, {{"FERRY_HOME", home_.path()}, {"NO_COLOR", "1"}});
  }
  std::string workflow(const std::string& drafter, const std::string& gate) {
    std::string path = dir_.file("wf.yaml");
    write_text(path, "name: evaltest\nstages:\n  eval:\n    kind: eval\n    target: oracle-target\n    drafter: " +
                         drafter + "\n    reference: oracle-disagree\n    prompts: oracle-prompts.jsonl\n    max_new_tokens: 16\n"
                         "    threads: 1\n" + gate);
    return path;
  }
  testing::TempDir dir_;
  testing::TempDir home_;
  int block_size_ = 0;
};

// The exact τ of constructed pairs is the engine's test (tests/eval); here the
// figures must travel intact from the engine to the store, the outputs and the log.
TEST_F(EvalStageTest, AgreeingDrafterPassesItsGateAndTheFiguresReachTheStore) {
  auto r = ferry({"run", workflow("oracle-agree", "    gate: {min_tau: 3.5, min_ratio_to_reference: 2}\n")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = nlohmann::json::parse(ferry({"status", "evaltest-1", "--json"}).out);
  auto stage = st["stages"][0];
  EXPECT_EQ(stage["state"], "succeeded");
  double tau = stage["metrics"]["tau"].get<double>();
  EXPECT_GT(tau, 3.5);
  EXPECT_LE(tau, block_size_);
  EXPECT_DOUBLE_EQ(stage["metrics"]["reference_tau"].get<double>(), 1.0);  // never accepted
  EXPECT_NEAR(std::stod(stage["outputs"]["tau"].get<std::string>()), tau, 1e-4);
  auto logs = ferry({"logs", "evaltest-1", "eval"});
  EXPECT_NE(logs.out.find("DFlash drafter eval"), std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find("Drafter vs reference"), std::string::npos) << logs.out;
}

TEST_F(EvalStageTest, GateFailsTheStageAndSaysWhy) {
  auto r = ferry({"run", workflow("oracle-disagree", "    gate: {min_tau: 2}\n")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto st = nlohmann::json::parse(ferry({"status", "evaltest-1", "--json"}).out);
  auto stage = st["stages"][0];
  EXPECT_EQ(stage["state"], "failed");
  EXPECT_NE(stage["error"].get<std::string>().find("gate failed"), std::string::npos) << stage.dump();
  EXPECT_DOUBLE_EQ(stage["metrics"]["tau"].get<double>(), 1.0);
}

TEST_F(EvalStageTest, MissingCheckpointIsAClearStageError) {
  auto r = ferry({"run", workflow("no-such-drafter", "")});
  EXPECT_EQ(r.exit_code, 1);
  auto st = nlohmann::json::parse(ferry({"status", "evaltest-1", "--json"}).out);
  EXPECT_NE(st["stages"][0]["error"].get<std::string>().find("no-such-drafter"), std::string::npos)
      << st["stages"][0].dump();
}

// prompt_format and tokenizer travel from the workflow to the engine: each setting
// gives its own refusal of a text prompt on the oracle target (vocabulary 64, no
// tokenizer.json), naming the prompt file's line and field.
TEST_F(EvalStageTest, PromptFormatAndTokenizerReachTheEngine) {
  write_text(dir_.file("text-prompts.jsonl"), "{\"prompt\": \"hi\"}\n");
  auto stage_error = [&](const std::string& extra) {
    std::string path = dir_.file("wf-text.yaml");
    write_text(path, "name: evaltext\nstages:\n  eval:\n    kind: eval\n    target: oracle-target\n"
                     "    drafter: oracle-agree\n    prompts: text-prompts.jsonl\n    max_new_tokens: 4\n" + extra);
    auto r = ferry({"run", path});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    auto runs = nlohmann::json::parse(ferry({"runs", "--json"}).out);
    std::string run = runs[0]["id"].get<std::string>();
    auto st = nlohmann::json::parse(ferry({"status", run, "--json"}).out);
    return st["stages"][0]["error"].get<std::string>();
  };
  std::string chat = stage_error("");
  EXPECT_NE(chat.find("text-prompts.jsonl:1: 'prompt': prompt_format chat needs the model's tokenizer"),
            std::string::npos) << chat;
  std::string raw = stage_error("    prompt_format: raw\n");
  EXPECT_NE(raw.find("text-prompts.jsonl:1: 'prompt': no tokenizer"), std::string::npos) << raw;
  EXPECT_NE(raw.find("vocabulary (64) is not byte-level"), std::string::npos) << raw;
  std::string named = stage_error("    tokenizer: oracle-agree\n");
  EXPECT_NE(named.find("oracle-agree/tokenizer.json: no such file"), std::string::npos) << named;
}

}  // namespace
}  // namespace ferry
