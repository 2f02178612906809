// ${{ int(…) }} end to end (review-4 P2): the real `ferry` binary and agent on the
// local host. A host-written output that is not an integer fails the stage that
// uses it, naming the output, and runs nothing of it; an integer reaches shell
// arithmetic. The unfiltered form is refused by `ferry validate` at its place.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

class LocalRunIntFilterTest : public testing::FerryHomeTest {
 protected:
  // Stage `count` writes n=`value`; stage `use` halves it in $(( )).
  std::string arith_workflow(const std::string& name, const std::string& value, const std::string& use) {
    return write_workflow("name: " + name + "\nstages:\n  count:\n    run: echo '" + value +
                              "' >> \"$FERRY_OUTPUT\"\n    outputs: [n]\n  use:\n    needs: count\n"
                              "    run: echo half is $(( " +
                              use + " / 2 ))\n",
                          name + ".yaml");
  }
};

TEST_F(LocalRunIntFilterTest, AValueThatIsNotAnIntegerFailsTheStageAndRunsNothing) {
  const std::string mark = work_.file("ran");
  auto wf = arith_workflow("arith", "n=$(touch " + mark + ")1", "${{ int(stages.count.outputs.n) }}");
  auto r = ferry({"run", wf});
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  auto s = stage(status("arith-1"), "use");
  EXPECT_EQ(s["state"], "failed") << s.dump();
  std::string error = s.value("error", std::string());
  EXPECT_NE(error.find("the value of stages.count.outputs.n is '$(touch "), std::string::npos) << error;
  EXPECT_NE(error.find("not an integer"), std::string::npos) << error;
  EXPECT_FALSE(testing::exists(mark)) << "the value ran";
}

TEST_F(LocalRunIntFilterTest, AnIntegerReachesShellArithmetic) {
  auto wf = arith_workflow("half", "n=-42", "${{ int(stages.count.outputs.n) }}");
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto logs = ferry({"logs", "half-1", "use"});
  EXPECT_NE(logs.out.find("half is -21"), std::string::npos) << logs.out;
}

TEST_F(LocalRunIntFilterTest, ValidateRefusesTheUnfilteredTemplateInArithmetic) {
  auto wf = arith_workflow("raw", "n=4", "${{ stages.count.outputs.n }}");
  auto r = ferry({"validate", wf});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find(wf + ":8:27: stage 'use' run: ${{ stages.count.outputs.n }} stands inside arithmetic"),
            std::string::npos)
      << r.out << r.err;
}

}  // namespace
}  // namespace ferry
