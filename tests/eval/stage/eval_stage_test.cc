// The eval stage end to end: `ferry run` runs the engine as a worker child
// (`ferry-eval worker`), records τ as metrics and outputs, appends the report to the
// stage's log, and fails the stage when the gate says so; a worker stuck or
// crashing ends its stage, never the coordinator. The models are the engine's own
// deterministic tiny ones (ferry-tiny-models), made by the test.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"
#include "tests/support/tiny_suite_test.h"

namespace ferry {
namespace {

using testing::read_text;
using testing::write_text;

class EvalStageTest : public testing::TinySuiteTest {
 protected:
  void SetUp() override {
    TinySuiteTest::SetUp();
    block_size_ = block_size();
  }
  std::string workflow(const std::string& drafter, const std::string& gate) {
    std::string path = suite_.file("wf.yaml");
    write_text(path,
               "name: evaltest\nstages:\n  eval:\n    kind: eval\n    target: oracle-target\n    drafter: " + drafter +
                   "\n    reference: oracle-disagree\n    prompts: oracle-prompts.jsonl\n    max_new_tokens: 16\n"
                   "    threads: 1\n" +
                   gate);
    return path;
  }
  /// The run's stage `name` (its only stage, in most of these tests).
  nlohmann::json stage_of(const std::string& run, const std::string& name = "eval") const {
    return stage(status(run), name);
  }
  int block_size_ = 0;
};

// The exact τ of constructed pairs is the engine's test (tests/eval); here the
// figures must travel intact from the engine to the store, the outputs and the log.
TEST_F(EvalStageTest, AgreeingDrafterPassesItsGateAndTheFiguresReachTheStore) {
  auto r = ferry({"run", workflow("oracle-agree", "    gate: {min_tau: 3.5, min_ratio_to_reference: 2}\n")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto stage = stage_of("evaltest-1");
  EXPECT_EQ(stage["state"], "succeeded");
  double tau = stage["metrics"]["tau"].get<double>();
  EXPECT_GT(tau, 3.5);
  EXPECT_LE(tau, block_size_);
  EXPECT_DOUBLE_EQ(stage["metrics"]["reference_tau"].get<double>(), 1.0);  // never accepted
  EXPECT_NEAR(std::stod(stage["outputs"]["tau"].get<std::string>()), tau, 1e-4);
  // The engine's last progress line, stored as the stage's progress: every prompt of
  // the last of its three runs (candidate, reference, baseline), and the candidate's τ.
  const std::string prompt_text = read_text(suite_.file("oracle-prompts.jsonl"));
  const auto prompts = static_cast<int64_t>(std::count(prompt_text.begin(), prompt_text.end(), '\n'));
  const auto& progress = stage["progress"];
  ASSERT_TRUE(progress.is_object()) << stage.dump(2);
  EXPECT_EQ(progress["kind"], "eval");
  EXPECT_EQ(progress["phase"], "baseline");
  EXPECT_EQ(progress["run"], 3);
  EXPECT_EQ(progress["runs"], 3);
  EXPECT_EQ(progress["prompts_done"], prompts);
  EXPECT_EQ(progress["prompts_total"], prompts);
  EXPECT_GT(progress["tokens"].get<int64_t>(), 0);
  EXPECT_DOUBLE_EQ(progress["eta_s"].get<double>(), 0);
  EXPECT_NEAR(progress["tau"].get<double>(), tau, 1e-6);
  auto logs = ferry({"logs", "evaltest-1", "eval"});
  EXPECT_NE(logs.out.find("DFlash drafter eval"), std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find("Drafter vs reference"), std::string::npos) << logs.out;
}

TEST_F(EvalStageTest, GateFailsTheStageAndSaysWhy) {
  auto r = ferry({"run", workflow("oracle-disagree", "    gate: {min_tau: 2}\n")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto stage = stage_of("evaltest-1");
  EXPECT_EQ(stage["state"], "failed");
  EXPECT_NE(stage["error"].get<std::string>().find("gate failed"), std::string::npos) << stage.dump();
  EXPECT_DOUBLE_EQ(stage["metrics"]["tau"].get<double>(), 1.0);
}

TEST_F(EvalStageTest, MissingCheckpointIsAClearStageError) {
  auto r = ferry({"run", workflow("no-such-drafter", "")});
  EXPECT_EQ(r.exit_code, 1);
  auto stage = stage_of("evaltest-1");
  EXPECT_NE(stage["error"].get<std::string>().find("no-such-drafter"), std::string::npos) << stage.dump();
}

// prompt_format and tokenizer travel from the workflow to the engine: each setting
// gives its own refusal of a text prompt on the oracle target (vocabulary 64, no
// tokenizer.json), naming the prompt file's line and field.
TEST_F(EvalStageTest, PromptFormatAndTokenizerReachTheEngine) {
  write_text(suite_.file("text-prompts.jsonl"), "{\"prompt\": \"hi\"}\n");
  auto stage_error = [&](const std::string& extra) {
    std::string path = suite_.file("wf-text.yaml");
    write_text(path,
               "name: evaltext\nstages:\n  eval:\n    kind: eval\n    target: oracle-target\n"
               "    drafter: oracle-agree\n    prompts: text-prompts.jsonl\n    max_new_tokens: 4\n" +
                   extra);
    auto r = ferry({"run", path});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    auto runs = nlohmann::json::parse(ferry({"runs", "--json"}).out);
    std::string run = runs[0]["id"].get<std::string>();
    return stage_of(run)["error"].get<std::string>();
  };
  std::string chat = stage_error("");
  EXPECT_NE(chat.find("text-prompts.jsonl:1: 'prompt': prompt_format chat needs the model's tokenizer"),
            std::string::npos)
      << chat;
  std::string raw = stage_error("    prompt_format: raw\n");
  EXPECT_NE(raw.find("text-prompts.jsonl:1: 'prompt': no tokenizer"), std::string::npos) << raw;
  EXPECT_NE(raw.find("vocabulary (64) is not byte-level"), std::string::npos) << raw;
  std::string named = stage_error("    tokenizer: oracle-agree\n");
  EXPECT_NE(named.find("oracle-agree/tokenizer.json: no such file"), std::string::npos) << named;
}

// A tokenizer.json whose Split regex (a+)+b backtracks for ages on a run of 'a's
// with no 'b'; the rest is the least the loader takes: a byte-level BPE of the 256
// byte tokens (GPT-2's byte-to-character map) and no merges.
std::string catastrophic_tokenizer() {
  nlohmann::json vocab = nlohmann::json::object();
  int shifted = 0;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
    unsigned cp = printable ? b : 256 + shifted++;
    std::string ch = cp < 0x80
                         ? std::string(1, static_cast<char>(cp))
                         : std::string{static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
    vocab[ch] = b;
  }
  nlohmann::json split = {
      {"type", "Split"}, {"pattern", {{"Regex", "(a+)+b"}}}, {"behavior", "Isolated"}, {"invert", false}};
  nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}};
  return nlohmann::json{{"normalizer", nullptr},
                        {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}}},
                        {"decoder", {{"type", "ByteLevel"}}},
                        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}}}
      .dump();
}

// Whether some process has `fifo` open for reading: a writer's non-blocking open
// fails with ENXIO when none has.
bool fifo_has_reader(const std::string& fifo) {
  int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0) ::close(fd);
  return fd >= 0;
}

// `timeout` stops an eval on the coordinator's machine wherever it is stuck: in
// the tokenizer's regex, and (stuck without the tokenizer, should the regex ever
// be cut short by a time limit) in a read of a prompts FIFO nobody writes. The
// run ends within the timeout and a few seconds, and ferry exits as it does for
// any failed run.
TEST_F(EvalStageTest, TimeoutStopsAnInProcessEvalStuckInTheTokenizer) {
  // A target whose vocabulary holds the tokenizer's 256 ids, and a drafter for it.
  for (auto args : std::vector<std::vector<std::string>>{
           {"target", "--out", suite_.file("byte-target"), "--vocab", "300"},
           {"drafter", "--out", suite_.file("byte-drafter"), "--target-vocab", "300"}}) {
    args.insert(args.begin(), testing::bin_dir() + "/ferry-tiny-models");
    auto made = testing::run_process(args);
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  ::mkdir(suite_.file("catastrophic").c_str(), 0755);
  write_text(suite_.file("catastrophic/tokenizer.json"), catastrophic_tokenizer());
  write_text(suite_.file("a-prompts.jsonl"), "{\"prompt\": \"" + std::string(60, 'a') + "\"}\n");
  const std::string fifo = suite_.file("fifo-prompts.jsonl");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Long enough for the worker to start and load on a busy machine (7.5 s seen on 2 shared cores).
  constexpr int kTimeoutS = 20;
  const std::string common =
      "    kind: eval\n    target: byte-target\n    drafter: byte-drafter\n"
      "    max_new_tokens: 4\n    threads: 1\n    timeout: " +
      std::to_string(kTimeoutS) + "s\n";
  std::string path = suite_.file("wf-stuck.yaml");
  write_text(path, "name: stuck\nstages:\n  regex:\n" + common +
                       "    prompts: a-prompts.jsonl\n    prompt_format: raw\n    tokenizer: catastrophic\n"
                       "  fifo:\n" +
                       common + "    prompts: fifo-prompts.jsonl\n");
  auto t0 = std::chrono::steady_clock::now();
  // Past the bound, the process is killed (and the exit code says so).
  auto r = testing::run_process({testing::bin_dir() + "/ferry", "run", path}, ferry.env(), 3 * kTimeoutS);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_LT(took, kTimeoutS + 5) << r.out << r.err;
  auto st = nlohmann::json::parse(ferry({"status", "stuck-1", "--json"}).out, nullptr, false);
  ASSERT_TRUE(st.is_object());
  for (const auto& stage : st["stages"]) {
    SCOPED_TRACE(stage.dump());
    if (stage["name"] == "fifo") {
      EXPECT_EQ(stage["state"], "timed_out");
    } else {
      // Timed out in the regex today; a tokenizer with a regex time limit fails it sooner.
      EXPECT_TRUE(stage["state"] == "timed_out" || stage["state"] == "failed");
    }
  }
  // Each got where it was meant to stick: past the tokenizer's load to the prompts'
  // encoding, and past the models' load to the prompts' read.
  std::string regex_log = ferry({"logs", "stuck-1", "regex"}).out;
  EXPECT_NE(regex_log.find("prompt format raw"), std::string::npos) << regex_log;
  std::string fifo_log = ferry({"logs", "stuck-1", "fifo"}).out;
  EXPECT_NE(fifo_log.find("loading drafter"), std::string::npos) << fifo_log;
  EXPECT_FALSE(fifo_has_reader(fifo)) << "the stuck worker still runs";
}

// A checkpoint cut short while the eval has it mapped (a trainer rewriting it in
// place) raises SIGBUS in whoever reads it: the worker, so the stage fails and says
// why, and ferry exits 1 as for any failed stage, not 135. The prompts are a FIFO,
// opened only after every model is loaded: the test truncates the target's weights
// then, before the first forward touches them.
TEST_F(EvalStageTest, ACheckpointTruncatedDuringTheEvalFailsTheStageNotTheCoordinator) {
  const std::string fifo = suite_.file("fifo-prompts.jsonl");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string path = suite_.file("wf-bus.yaml");
  write_text(path,
             "name: bus\nstages:\n  eval:\n    kind: eval\n    target: oracle-target\n"
             "    drafter: oracle-agree\n    prompts: fifo-prompts.jsonl\n    max_new_tokens: 16\n"
             "    threads: 1\n");
  pid_t pid = testing::spawn_process({testing::bin_dir() + "/ferry", "run", path}, ferry.env(), suite_.file("run.log"));
  // Our end opens once the engine holds the reader's (blocked in its open until then);
  // kept open, so the engine's read waits for the prompts.
  int fd = -1;
  ASSERT_TRUE(testing::wait_until([&] { return (fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) >= 0; },
                                  std::chrono::seconds(120)))
      << read_text(suite_.file("run.log"));
  ASSERT_EQ(::truncate(suite_.file("oracle-target/model.safetensors").c_str(), 0), 0) << std::strerror(errno);
  std::string prompts = read_text(suite_.file("oracle-prompts.jsonl"));
  ASSERT_EQ(::write(fd, prompts.data(), prompts.size()), static_cast<ssize_t>(prompts.size()));
  ::close(fd);
  EXPECT_EQ(testing::wait_process(pid, 120), 1) << read_text(suite_.file("run.log"));
  auto stage = stage_of("bus-1");
  EXPECT_EQ(stage["state"], "failed");
  EXPECT_NE(stage["error"].get<std::string>().find("Bus error"), std::string::npos) << stage.dump();
}

// A worker that dies while writing its result leaves its temporary file
// (result.json.tmp.PID.RAND) in the result folder: the stage fails, and the folder
// goes with everything in it, so nothing named ferry-eval-* stays in $TMPDIR. The
// worker here is a script standing in for ferry-eval (FERRY_SEND_EVAL_WORKER).
TEST_F(EvalStageTest, AWorkerThatDiesWritingItsResultLeavesNoFolderBehind) {
  const std::string tmp = suite_.file("tmpdir");
  ASSERT_EQ(::mkdir(tmp.c_str(), 0700), 0);
  const std::string worker = suite_.file("dying-worker.sh");
  write_text(worker, R"SH(#!/bin/sh
result=$(printf '%s' "$FERRY_EVAL_SPEC" | sed 's/.*"result":"\([^"]*\)".*/\1/')
printf '{"half' > "$result.tmp.$$.x7Q2"
exit 9
)SH");
  ASSERT_EQ(::chmod(worker.c_str(), 0755), 0);
  auto r = ferry.with_env({{"FERRY_SEND_EVAL_WORKER", worker}, {"TMPDIR", tmp}})({"run", workflow("oracle-agree", "")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(stage_of("evaltest-1")["state"], "failed");
  std::vector<std::string> left;
  if (DIR* d = ::opendir(tmp.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (std::string(e->d_name).rfind("ferry-eval-", 0) == 0) left.push_back(e->d_name);
    }
    ::closedir(d);
  }
  EXPECT_TRUE(left.empty()) << left.size() << " left, the first " << (left.empty() ? "" : left[0]);
}

}  // namespace
}  // namespace ferry
