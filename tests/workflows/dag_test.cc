// The stage graph: find_cycle, ancestors, topological_order, stage_output_names.
// Workflows are built by hand here; the parser is not involved.
#include "workflows/dag.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ferry::workflow {
namespace {

using Names = std::vector<std::string>;

// Stages in file order, each with the names it needs.
Workflow graph(std::initializer_list<std::pair<const char*, Names>> stages) {
  Workflow wf;
  wf.name = "g";
  for (const auto& [name, needs] : stages) {
    Stage s;
    s.name = name;
    s.needs = needs;
    wf.stages.push_back(s);
  }
  return wf;
}

TEST(DagTest, AcyclicGraphHasNoCycle) {
  EXPECT_TRUE(find_cycle(graph({})).empty());
  EXPECT_TRUE(find_cycle(graph({{"a", {}}})).empty());
  EXPECT_TRUE(find_cycle(graph({{"a", {}}, {"b", {"a"}}, {"c", {"a"}}, {"d", {"b", "c"}}})).empty());
}

TEST(DagTest, FindsTwoStageCycle) {
  EXPECT_EQ(find_cycle(graph({{"a", {"b"}}, {"b", {"a"}}})), (Names{"a", "b", "a"}));
}

TEST(DagTest, FindsThreeStageCycleInNeedsOrder) {
  // a needs b, b needs c, c needs a.
  EXPECT_EQ(find_cycle(graph({{"a", {"b"}}, {"b", {"c"}}, {"c", {"a"}}})), (Names{"a", "b", "c", "a"}));
}

TEST(DagTest, CycleBehindAnAcyclicPrefixOmitsThePrefix) {
  // start → x → y → z → x: the cycle is x, y, z only.
  auto cycle = find_cycle(graph({{"start", {"x"}}, {"x", {"y"}}, {"y", {"z"}}, {"z", {"x"}}}));
  EXPECT_EQ(cycle, (Names{"x", "y", "z", "x"}));
}

TEST(DagTest, CycleFoundAfterAnAcyclicComponent) {
  auto cycle = find_cycle(graph({{"a", {}}, {"b", {"a"}}, {"c", {"d"}}, {"d", {"c"}}}));
  EXPECT_EQ(cycle, (Names{"c", "d", "c"}));
}

TEST(DagTest, SelfNeedIsNotReportedAsACycle) {
  // Validation reports "needs itself"; a cycle report would say it twice.
  EXPECT_TRUE(find_cycle(graph({{"a", {"a"}}})).empty());
  EXPECT_EQ(find_cycle(graph({{"a", {"a"}}, {"b", {"c"}}, {"c", {"b"}}})), (Names{"b", "c", "b"}));
}

TEST(DagTest, UnknownNeedsAreIgnored) {
  Workflow wf = graph({{"a", {"ghost"}}, {"b", {"a", "phantom"}}});
  EXPECT_TRUE(find_cycle(wf).empty());
  EXPECT_EQ(topological_order(wf), (Names{"a", "b"}));
}

TEST(DagTest, AncestorsAreTransitive) {
  Workflow wf = graph({{"a", {}}, {"b", {"a"}}, {"c", {"a"}}, {"d", {"b", "c"}}, {"e", {"d"}}, {"lone", {}}});
  EXPECT_EQ(ancestors(wf, "e"), (std::set<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(ancestors(wf, "d"), (std::set<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ancestors(wf, "b"), (std::set<std::string>{"a"}));
  EXPECT_TRUE(ancestors(wf, "a").empty());
  EXPECT_TRUE(ancestors(wf, "lone").empty());
  EXPECT_TRUE(ancestors(wf, "no-such-stage").empty());
}

TEST(DagTest, AncestorsTerminateOnCycles) {
  Workflow wf = graph({{"a", {"b"}}, {"b", {"a"}}, {"c", {"a"}}});
  EXPECT_EQ(ancestors(wf, "c"), (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(ancestors(wf, "a"), (std::set<std::string>{"a", "b"}));
}

TEST(DagTest, TopologicalOrderPutsNeedsFirstAndKeepsFileOrderOtherwise) {
  // File order: report, train, fetch, lint. report needs train, train needs fetch.
  Workflow wf = graph({{"report", {"train"}}, {"train", {"fetch"}}, {"fetch", {}}, {"lint", {}}});
  EXPECT_EQ(topological_order(wf), (Names{"fetch", "lint", "train", "report"}));
}

TEST(DagTest, TopologicalOrderOfIndependentStagesIsFileOrder) {
  EXPECT_EQ(topological_order(graph({{"z", {}}, {"a", {}}, {"m", {}}})), (Names{"z", "a", "m"}));
}

TEST(DagTest, TopologicalOrderOfDiamond) {
  Workflow wf = graph({{"d", {"b", "c"}}, {"c", {"a"}}, {"b", {"a"}}, {"a", {}}});
  auto order = topological_order(wf);
  ASSERT_EQ(order.size(), 4u);
  auto pos = [&](const std::string& n) { return std::find(order.begin(), order.end(), n) - order.begin(); };
  EXPECT_LT(pos("a"), pos("b"));
  EXPECT_LT(pos("a"), pos("c"));
  EXPECT_LT(pos("b"), pos("d"));
  EXPECT_LT(pos("c"), pos("d"));
}

TEST(DagTest, TopologicalOrderLeavesOutStagesOnACycle) {
  Workflow wf = graph({{"a", {}}, {"b", {"c"}}, {"c", {"b"}}, {"d", {"b"}}});
  EXPECT_EQ(topological_order(wf), (Names{"a"}));
}

TEST(DagTest, StageOutputNamesAddThoseOfTheKind) {
  Stage s;
  s.outputs.push_back({"model", std::nullopt, {}});
  s.outputs.push_back({"score", Text{"x", {}}, {}});
  s.kind = StageKind::kCommand;
  EXPECT_EQ(stage_output_names(s), (Names{"model", "score"}));
  s.kind = StageKind::kCopy;
  EXPECT_EQ(stage_output_names(s), (Names{"model", "score", "path", "manifest_hash", "bytes"}));
  s.kind = StageKind::kEval;
  EXPECT_EQ(stage_output_names(s), (Names{"model", "score", "tau", "reference_tau", "speedup"}));
}

}  // namespace
}  // namespace ferry::workflow
