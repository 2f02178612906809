// The workflow parser and validator on mutated YAML (the examples, the malformed
// corpus and a few hostile shapes): each file ends in a workflow or diagnostics
// that name a place in it, never a crash, a hang or an exception.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "base/file_util.h"
#include "tests/fuzz/fuzz_rounds.h"
#include "tests/fuzz/random_input.h"
#include "workflows/param_overrides.h"
#include "workflows/parser.h"

namespace ferry::fuzz {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> workflow_seeds() {
  std::vector<fs::path> files;
  for (const char* dir : {"/examples/hello", "/examples/dflash-tiny", "/tests/workflows/malformed"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(std::string(FERRY_SOURCE_DIR) + dir, ec)) {
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> seeds;
  for (const auto& f : files) {
    auto text = read_file(f.string());
    if (text.ok()) seeds.push_back(*text);
  }
  // Aliases that expand to 10^8 nodes if anything walked them naively.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int k = 0; k < 10; ++k) laughs += std::string(k ? ", " : "") + "*" + static_cast<char>(c - 1);
    laughs += "]\n";
  }
  seeds.push_back("name: laughs\n" + laughs + "params:\n  p: *i\nstages:\n  s:\n    run: *i\n");
  seeds.push_back("name: w\nhosts: &h {a: *h}\n");
  seeds.push_back("name: w\nstages:\n  s:\n    run: echo ${{ params.${{ params.x }} }}\n");
  return seeds;
}

// Line-level edits YAML cares about: indentation, duplicated and dropped lines.
std::string mutate_lines(Mutator& m, const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  if (lines.empty()) return text;
  size_t i = m.below(lines.size());
  switch (m.below(4)) {
    case 0: lines[i] = std::string(m.below(9), ' ') + lines[i]; break;
    case 1: lines.insert(lines.begin() + static_cast<long>(i), lines[m.below(lines.size())]); break;
    case 2: lines.erase(lines.begin() + static_cast<long>(i)); break;
    default: std::swap(lines[i], lines[m.below(lines.size())]); break;
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(WorkflowFuzzTest, MutatedWorkflowsParseOrGetDiagnostics) {
  const std::vector<std::string> seeds = workflow_seeds();
  ASSERT_GE(seeds.size(), 20u);
  FuzzPlan plan = fuzz_plan(2500);
  int clean = 0, diagnosed = 0;
  for_each_round(plan, "WorkflowFuzzTest", [&](Mutator& m, int) {
    std::string text = seeds[m.below(seeds.size())];
    text = m.chance(40) ? mutate_lines(m, text) : m.mutate_bytes(text, seeds);
    if (m.chance(30)) text = m.mutate_bytes(text, seeds);
    const size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    workflow::Diagnostics d("fuzz.yaml");
    workflow::Workflow wf = workflow::parse_workflow_collecting("fuzz.yaml", text, &d);
    for (const auto& diag : d.list()) {
      EXPECT_FALSE(diag.message.empty());
      EXPECT_GE(diag.at.line, 0);
      EXPECT_LE(static_cast<size_t>(diag.at.line), lines + 1) << diag.message;
    }
    (void)d.to_string();
    auto whole = workflow::parse_workflow("fuzz.yaml", text);
    EXPECT_EQ(whole.ok(), d.empty());
    if (d.empty()) {
      ++clean;
      (void)workflow::apply_param_overrides(&wf, {{"x", "1"}});
    } else {
      ++diagnosed;
    }
  });
  expect_outcomes(plan, "workflows", {{"clean", clean, 20}, {"with diagnostics", diagnosed, 200}});
}

}  // namespace
}  // namespace ferry::fuzz
