// run_eval and `ferry eval` end to end on tiny constructed models: τ and the gate on
// pairs whose τ is known (oracle target with agree / disagree drafters), the report and
// its drafter diff, errors as statuses (never exceptions), cancellation from another
// thread, and the CLI's exit codes.
#include "jobs/eval/run/eval_runner.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "jobs/eval/run/eval_command.h"
#include "jobs/eval/run/eval_flags.h"
#include "jobs/eval/run/eval_gate.h"
#include "tests/eval/eval_test_util.h"
#include "tests/eval/model_suite.h"

namespace ferry::eval {
namespace {

using testing::ScratchDir;

class EvalRunnerTest : public testing::ModelSuiteTest<EvalRunnerTest> {
 public:
  static void write_models() {
    ASSERT_TRUE(testing::write_oracle_models(dir_->path(), 1).ok());
    TinyDrafterSpec other = testing::oracle_drafter_spec("agree", 8);
    other.target_layer_ids = {1, 2};
    ASSERT_TRUE(write_tiny_drafter(*dir_ / "agree-other-layers", other, {}).ok());
    ASSERT_TRUE(write_tiny_prompts(*dir_ / "prompts.jsonl", 5, 64, 3, 10, 9).ok());
    ASSERT_TRUE(write_tiny_target(*dir_ / "bytes", testing::random_target_spec(), {}).ok());
    ASSERT_TRUE(write_tiny_drafter(*dir_ / "bytes-drafter", testing::random_drafter_spec(), {}).ok());
  }

 protected:
  static EvalSpec spec(const std::string& drafter, const std::string& reference = "") {
    EvalSpec s;
    s.target = *dir_ / "target";
    s.drafter = *dir_ / drafter;
    s.reference = reference.empty() ? "" : *dir_ / reference;
    s.prompts = *dir_ / "prompts.jsonl";
    s.max_new_tokens = 24;
    s.threads = 1;
    return s;
  }
};

TEST_F(EvalRunnerTest, ReportsKnownTauAndPassesGate) {
  EvalSpec s = spec("agree", "disagree");
  s.min_tau = 7.5;
  s.min_ratio_to_reference = 7.5;
  std::vector<std::string> lines;
  auto r = run_eval(s, [&](const std::string& l) { lines.push_back(l); }, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->block_size, 8);
  EXPECT_EQ(r->prompt_count, 5);
  EXPECT_DOUBLE_EQ(r->candidate.tau, 8.0);  // always accepted: every step accepts 7 + bonus
  EXPECT_DOUBLE_EQ(r->reference_run->tau, 1.0);
  EXPECT_DOUBLE_EQ(*r->ratio_to_reference, 8.0);
  EXPECT_EQ(r->candidate.acceptance_histogram[8], r->candidate.steps);
  EXPECT_DOUBLE_EQ(r->candidate.acceptance_rate[7], 1.0);
  EXPECT_DOUBLE_EQ(r->reference_run->acceptance_rate[1], 0.0);
  EXPECT_EQ(r->candidate.steps, 5 * 3);  // 24 new tokens, 8 per step
  EXPECT_EQ(r->candidate.target_forwards, 5 * 4);
  EXPECT_EQ(r->baseline->steps, 5 * 24);
  EXPECT_EQ(r->candidate.responses_differing_from_baseline, 0);
  EXPECT_EQ(r->reference_run->responses_differing_from_baseline, 0);
  EXPECT_GT(r->speedup, 0);
  EXPECT_TRUE(r->gate_passed) << r->gate_message;
  EXPECT_FALSE(lines.empty());
  // Per response, for inspecting a gap prompt by prompt: 3 steps of 8 each, equal to
  // plain decoding.
  ASSERT_EQ(r->responses.size(), 5u);
  for (const auto& resp : r->responses) {
    nlohmann::json rj = resp.to_json();
    EXPECT_EQ(rj["acceptance_lengths"], nlohmann::json::array({8, 8, 8})) << rj.dump();
    EXPECT_DOUBLE_EQ(rj["tau"].get<double>(), 8.0);
    EXPECT_EQ(rj["matches_baseline"], true);
    EXPECT_EQ(rj["ids"].size(), 24u);
  }

  auto m = r->metrics();
  EXPECT_DOUBLE_EQ(m.at("tau"), 8.0);
  EXPECT_DOUBLE_EQ(m.at("reference_tau"), 1.0);
  EXPECT_DOUBLE_EQ(m.at("ratio_to_reference"), 8.0);
  EXPECT_TRUE(m.count("speedup"));
  EXPECT_TRUE(m.count("tokens_per_second"));
  nlohmann::json j = r->to_json();
  EXPECT_DOUBLE_EQ(j["candidate"]["tau"].get<double>(), 8.0);
  EXPECT_EQ(j["gate_passed"], true);

  // The diff: same config, the final norm differs (negated on the vocab dims).
  ASSERT_TRUE(r->diff.has_value());
  for (const auto& f : r->diff->fields) EXPECT_FALSE(f.differs) << f.name;
  bool norm_listed = false;
  for (const auto& t : r->diff->tensors) norm_listed |= t.name == "norm.weight" && t.issue == "values";
  EXPECT_TRUE(norm_listed);
  const std::string text = r->to_text();
  EXPECT_NE(text.find("TAU 8.000"), std::string::npos) << text;
  EXPECT_NE(text.find("norm.weight: values"), std::string::npos) << text;
  EXPECT_NE(text.find("gate: PASSED (all gates met)"), std::string::npos) << text;
  EvalReport ungated = *r;  // passed with nothing asked: said so, not a bare PASSED
  judge_gate(std::nullopt, std::nullopt, &ungated);
  EXPECT_TRUE(ungated.gate_passed);
  EXPECT_NE(ungated.to_text().find("gate: PASSED (no gate set)"), std::string::npos) << ungated.to_text();
  // The inputs by content: each one the report keeps, on its own line, as the JSON has it.
  ASSERT_EQ(j["fingerprints"].size(), r->fingerprints.size());
  std::set<std::string> whats;
  for (const auto& f : j["fingerprints"]) {
    whats.insert(f["what"].get<std::string>());
    const std::string line = "  input    " + f["what"].get<std::string>() + " " + f["digest"].get<std::string>() + "\n";
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
  EXPECT_EQ(whats, (std::set<std::string>{"target", "drafter", "reference", "prompts"})) << j["fingerprints"].dump();
}

// What the report says it ran with is checked against sources the engine does not
// use: the checkpoint's dtype as written, the file the dynamic loader maps for
// libblas.so.3 (its real path, as /proc/self/maps lists it), the thread count asked for.
TEST_F(EvalRunnerTest, ReportNamesTheBlasDtypeAndThreadsItRanWith) {
  ScratchDir dir("runtime");
  ASSERT_TRUE(write_tiny_target(dir / "bf16", testing::oracle_target_spec(1), {"BF16", 0, false}).ok());
  EvalSpec s = spec("agree");
  s.target = dir / "bf16";
  s.max_new_tokens = 8;
  s.baseline = false;
  std::vector<std::string> lines;
  auto r = run_eval(s, [&](const std::string& l) { lines.push_back(l); }, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype, "bfloat16");  // followed the checkpoint
  EXPECT_EQ(r->dtype_source, "checkpoint BF16");
  EXPECT_EQ(r->threads, 1);
  // BF16 used in place, or repacked in place of the mapping for the BF16 kernel.
  EXPECT_EQ(r->loads[0].tensors_zero_copy + r->loads[0].tensors_repacked, r->loads[0].tensors_loaded);
  EXPECT_EQ(r->loads[0].bytes_copied, 0);
  // Every tensor's bytes, as the file holds them: the file less its header.
  const std::string file = (dir / "bf16") + "/model.safetensors";
  int64_t header = 0;
  {
    std::ifstream in(file, std::ios::binary);
    in.read(reinterpret_cast<char*>(&header), 8);
  }
  EXPECT_EQ(r->loads[0].bytes_mapped, static_cast<int64_t>(std::filesystem::file_size(file)) - 8 - header);
  EXPECT_DOUBLE_EQ(r->candidate.tau, 8.0);
  EXPECT_TRUE(r->responses.at(0).to_json()["matches_baseline"].is_null()) << "no baseline ran";

  std::string maps = testing::read_text("/proc/self/maps");
  ASSERT_FALSE(r->blas_library.empty());
  EXPECT_NE(maps.find(r->blas_library), std::string::npos) << r->blas_library << " is not mapped";
  // The OpenMP OpenBLAS by the engine's own RUNPATH when installed, whatever the
  // system's alternative; else the alternative's libblas.so.3.
  char real[PATH_MAX];
  const std::string openmp = "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3";
  const char* blas = ::access(openmp.c_str(), F_OK) == 0 ? openmp.c_str() : "/usr/lib/x86_64-linux-gnu/libblas.so.3";
  const bool netlib =
      ::realpath(blas, real) != nullptr && std::string(real).find("/blas/libblas.so") != std::string::npos;
  EXPECT_EQ(r->blas_reference, netlib) << r->blas;
  if (std::string(real).find("openblas") != std::string::npos) {
    EXPECT_EQ(r->blas_library, std::string(real));
    EXPECT_NE(r->blas.find("OpenBLAS"), std::string::npos) << r->blas;
    if (blas == openmp) {
      EXPECT_EQ(r->blas_threading, "openmp");
    } else {
      EXPECT_FALSE(r->blas_threading.empty());
    }
  }
  EXPECT_FALSE(r->isa.empty());

  const std::string text = r->to_text();
  EXPECT_NE(text.find("cpu bfloat16 (checkpoint BF16), 1 thread of "), std::string::npos) << text;
  EXPECT_NE(text.find("BLAS     " + r->blas), std::string::npos) << text;
  EXPECT_NE(text.find(r->blas_library), std::string::npos) << text;
  nlohmann::json j = r->to_json();
  EXPECT_EQ(j["dtype"], "bfloat16");
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["runtime"]["blas"], r->blas);
  bool said = false;
  for (const auto& l : lines) said |= l.find("bfloat16") != std::string::npos && l.find(r->blas) != std::string::npos;
  EXPECT_TRUE(said) << "no progress line names the dtype and the BLAS";
  if (netlib) {  // the slow BLAS is named, with the fix, in the report and on the progress stream
    EXPECT_NE(text.find("update-alternatives"), std::string::npos) << text;
  }

  // An F32 checkpoint stays F32; --dtype overrides and says so.
  s.target = *dir_ / "target";
  r = run_eval(s, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype, "float32");
  EXPECT_EQ(r->dtype_source, "checkpoint F32");
  s.dtype = "bfloat16";
  s.threads = 2;
  r = run_eval(s, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->dtype, "bfloat16");
  EXPECT_EQ(r->dtype_source, "--dtype");
  EXPECT_EQ(r->threads, 2);
  EXPECT_DOUBLE_EQ(r->candidate.tau, 8.0);
}

TEST_F(EvalRunnerTest, GateFailsBelowThresholds) {
  EvalSpec s = spec("disagree", "agree");
  s.min_tau = 1.5;
  s.min_ratio_to_reference = 0.9;
  s.baseline = false;
  auto r = run_eval(s, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->candidate.tau, 1.0);
  EXPECT_FALSE(r->gate_passed);
  EXPECT_NE(r->gate_message.find("min_tau"), std::string::npos);
  EXPECT_NE(r->gate_message.find("min_ratio_to_reference"), std::string::npos);
  EXPECT_FALSE(r->baseline.has_value());
  EXPECT_EQ(r->metrics().count("speedup"), 0u);
  EXPECT_FALSE(r->to_json().contains("speedup")) << "no baseline ran: no speedup, not 0";
}

TEST_F(EvalRunnerTest, DiffShowsConfigDifferences) {
  EvalSpec s = spec("agree", "agree-other-layers");
  s.baseline = false;
  auto r = run_eval(s, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  bool layers = false;
  for (const auto& f : r->diff->fields) {
    if (f.name == "target_layer_ids") {
      layers = f.differs;
      EXPECT_EQ(f.candidate, "[0, 2]");
      EXPECT_EQ(f.reference, "[1, 2]");
    }
  }
  EXPECT_TRUE(layers);
  EXPECT_NE(r->to_text().find("DIFF target_layer_ids"), std::string::npos) << r->to_text();
}

TEST_F(EvalRunnerTest, TextPromptsOnByteVocabulary) {
  ScratchDir dir("text");
  testing::write_text(dir / "p.jsonl", "{\"text\": \"hello world\"}\n\n{\"input_ids\": [1, 2, 3]}\n");
  EvalSpec s;
  s.target = *dir_ / "bytes";
  s.drafter = *dir_ / "bytes-drafter";
  s.prompts = dir / "p.jsonl";
  s.max_new_tokens = 8;
  s.block_size = 4;
  s.threads = 1;
  auto r = run_eval(s, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->prompt_count, 2);
  EXPECT_EQ(r->candidate.responses_differing_from_baseline, 0);
}

TEST_F(EvalRunnerTest, BadInputIsAStatusNamingTheProblem) {
  ScratchDir dir("bad");
  struct Case {
    std::string lines;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{{"{\"input_ids\": [1, 2\n", "p.jsonl:1"},
                                         {"{\"input_ids\": [1]}\n{\"input_ids\": [999]}\n", "p.jsonl:2"},
                                         {"{\"text\": \"hi\"}\n", "byte-level"},
                                         {"{\"other\": 1}\n", "input_ids"},
                                         {"", "no prompts"}}) {
    testing::write_text(dir / "p.jsonl", c.lines);
    EvalSpec s = spec("agree");
    s.prompts = dir / "p.jsonl";
    auto r = run_eval(s, nullptr, nullptr);
    ASSERT_FALSE(r.ok()) << c.lines;
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
  }
  // A prompts file that is not there fails before the models load (minutes for a large one).
  EvalSpec s = spec("agree");
  s.prompts = dir / "typo.jsonl";
  std::vector<std::string> said;
  auto r = run_eval(
      s, [&](const std::string& l) { said.push_back(l); }, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("typo.jsonl: cannot open"), std::string::npos) << r.status().message();
  for (const auto& l : said) EXPECT_EQ(l.find("loading"), std::string::npos) << l;
  s = spec("agree");
  s.device = "cuda";
  r = run_eval(s, nullptr, nullptr);
  if (!r.ok()) {  // without CUDA in libtorch the error says so; with it, the eval just runs
    EXPECT_NE(r.status().message().find("CUDA"), std::string::npos) << r.status().message();
  }
  s = spec("agree");
  s.dtype = "int8";
  EXPECT_FALSE(run_eval(s, nullptr, nullptr).ok());
  s = spec("missing-folder");
  r = run_eval(s, nullptr, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("missing-folder"), std::string::npos);
  s = spec("agree");
  s.min_ratio_to_reference = 1.0;  // without a reference
  EXPECT_FALSE(run_eval(s, nullptr, nullptr).ok());
  // A drafter made for another target: fc width and layer ids do not fit.
  s = spec("agree");
  s.target = *dir_ / "bytes";
  r = run_eval(s, nullptr, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("drafter hidden_size 96 differs from the target's 64"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("made for another target"), std::string::npos) << r.status().message();
}

TEST_F(EvalRunnerTest, CancelFromAnotherThread) {
  std::atomic<bool> cancel{false};
  Result<EvalReport> result = internal_error("not run");
  // The progress callback raises the flag after the first response, from the eval's
  // thread; the eval must stop at the next step.
  std::thread worker([&] {
    result = run_eval(spec("disagree"), [&](const std::string& line) {
      if (line.find("response 1/") != std::string::npos) cancel = true;
    }, &cancel);
  });
  worker.join();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kCancelled);
}

int run_cli(const std::string& args, std::string* out) {
  std::string cmd = std::string(FERRY_EVAL_BIN) + " " + args + " 2>/dev/null";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out->append(buf, n);
  int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(EvalRunnerTest, CommandExitCodes) {
  const std::string base = "--target " + (*dir_ / "target") + " --prompts " + (*dir_ / "prompts.jsonl") +
                           " --max-new-tokens 8 --threads 1 --no-baseline";
  std::string out;
  EXPECT_EQ(run_cli(base + " --drafter " + (*dir_ / "agree") + " --min-tau 7.9 --json", &out), 0);
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  EXPECT_DOUBLE_EQ(j["metrics"]["tau"].get<double>(), 8.0);
  EXPECT_EQ(run_cli(base + " --drafter " + (*dir_ / "disagree") + " --min-tau 1.5", &out), 1);
  EXPECT_NE(out.find("gate: FAILED"), std::string::npos) << out;
  EXPECT_EQ(run_cli(base, &out), 2);  // no drafter
  EXPECT_EQ(run_cli(base + " --drafter " + (*dir_ / "agree") + " --block-size x", &out), 2);
  EXPECT_EQ(run_cli(base + " --drafter " + (*dir_ / "agree") + " --bogus 1", &out), 2);
  EXPECT_EQ(run_cli(base + " --drafter /nonexistent", &out), 2);

  bool json = false;
  auto parsed = parse_eval_args({"--target", "t", "--drafter", "d", "--prompts", "p", "--min-ratio", "0.8",
                                 "--block-size", "4", "--json"}, &json);
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(json);
  EXPECT_EQ(parsed->block_size, 4);
  EXPECT_DOUBLE_EQ(*parsed->min_ratio_to_reference, 0.8);
}

// `--baseline-store DIR` from the command line, as a watch uses the store: the second
// eval, of another drafter, takes the baseline the first decoded (the same τ and
// tokens) and runs the target only for its candidate.
TEST_F(EvalRunnerTest, BaselineStoreFlagReusesTheFirstCommandsBaseline) {
  ScratchDir scratch("baseline-store-flag");
  const std::string store = scratch / "baselines";
  const std::string base = "--target " + (*dir_ / "target") + " --prompts " + (*dir_ / "prompts.jsonl") +
                           " --max-new-tokens 8 --threads 1 --json --baseline-store " + store;
  std::string out;
  ASSERT_EQ(run_cli(base + " --drafter " + (*dir_ / "agree"), &out), 0);
  auto first = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(first.is_discarded()) << out;
  ASSERT_EQ(run_cli(base + " --drafter " + (*dir_ / "disagree"), &out), 0);
  auto second = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(second.is_discarded()) << out;
  EXPECT_EQ(first.value("baseline_reused", true), false);
  EXPECT_EQ(second.value("baseline_reused", false), true) << second.dump().substr(0, 2000);
  EXPECT_EQ(second["baseline_key"], first["baseline_key"]);
  EXPECT_EQ(second["baseline"]["target_forwards"], first["baseline"]["target_forwards"]);
  EXPECT_EQ(second["baseline"]["response_taus"], first["baseline"]["response_taus"]);
  // The second ran the target for its candidate alone.
  EXPECT_EQ(second["target_forwards_run"], second["candidate"]["target_forwards"]);
  EXPECT_GT(first["target_forwards_run"].get<int64_t>(), first["candidate"]["target_forwards"].get<int64_t>());
}

// `ferry completion` offers kEvalFlags (newcomer report U12): each is one the parser
// takes, and the parser takes no flag missing there.
TEST(EvalFlagsTest, TheCompletionsFlagListIsWhatTheParserTakes) {
  for (const EvalFlag& f : kEvalFlags) {
    if (std::string(f.name) == "--help") continue;  // answered before parsing
    // Given below already; a second unnamed file is refused (EvalDatasetsArgsTest).
    if (std::string(f.name) == "--prompts") continue;
    std::vector<std::string> args = {"--target", "t", "--drafter", "d", "--prompts", "p", f.name};
    std::string choices = f.choices;
    if (f.takes_value) args.push_back(!choices.empty() ? choices.substr(0, choices.find(' '))
                                      : std::string(f.name) == "--shard" ? "1/2" : "1");
    bool json = false;
    auto parsed = parse_eval_args(args, &json);
    EXPECT_TRUE(parsed.ok()) << f.name << ": " << parsed.status().message();
  }
  bool json = false;
  auto unlisted = parse_eval_args({"--target", "t", "--drafter", "d", "--prompts", "p", "--bogus", "1"}, &json);
  ASSERT_FALSE(unlisted.ok());
  EXPECT_NE(unlisted.status().message().find("--bogus"), std::string::npos);
}

// Debian's reference BLAS, put in front of the selected one for one child process
// (the loader takes libblas.so.3 from LD_LIBRARY_PATH first): the report and stderr
// must name it and give the fix.
TEST_F(EvalRunnerTest, ReferenceBlasIsNamedWithTheFix) {
  const std::string netlib = "/usr/lib/x86_64-linux-gnu/blas";
  if (!std::ifstream(netlib + "/libblas.so.3")) GTEST_SKIP() << "no reference BLAS (libblas3) installed";
  const std::string cmd = "LD_LIBRARY_PATH=" + netlib + " " + FERRY_EVAL_BIN + " --target " + (*dir_ / "target") +
                          " --drafter " + (*dir_ / "agree") + " --prompts " + (*dir_ / "prompts.jsonl") +
                          " --max-new-tokens 8 --threads 1 --no-baseline 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  ASSERT_EQ(::pclose(pipe), 0) << out;
  EXPECT_NE(out.find("eval: WARNING: float32 matmuls run on the reference (netlib) BLAS " + netlib), std::string::npos)
      << out;  // stderr
  EXPECT_NE(out.find("BLAS     reference BLAS (netlib)"), std::string::npos) << out;  // the report
  EXPECT_NE(out.find("warning: float32 matmuls run on the reference"), std::string::npos) << out;
  EXPECT_NE(out.find("update-alternatives --set libblas.so.3"), std::string::npos) << out;
}

TEST(TinyModelsToolTest, WritesLoadableSuite) {
  ScratchDir dir("tool");
  std::string cmd = std::string(FERRY_TINY_MODELS_BIN) + " suite --out " + dir.path();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EvalSpec s;
  s.target = dir / "target-bf16-sharded";
  s.drafter = dir / "drafter";
  s.reference = dir / "drafter-reference";
  s.prompts = dir / "prompts.jsonl";
  s.max_new_tokens = 4;
  s.threads = 1;
  auto r = run_eval(s, nullptr, nullptr);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->prompt_count, 20);
  cmd = std::string(FERRY_TINY_MODELS_BIN) + " target --out " + (dir / "x") + " --layers nope 2>/dev/null";
  EXPECT_NE(std::system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace ferry::eval
