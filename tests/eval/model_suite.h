// ModelSuiteTest: the fixture base of an eval suite whose tests share tiny models
// written once. Before the suite's first test it makes the suite's scratch folder,
// dir_ (named after the suite), and has the suite write its models there
// (Suite::write_models, whose failed ASSERT fails the suite); after its last test it
// removes the folder. Header-only; gtest's thread.
#pragma once

#include <gtest/gtest.h>

#include "jobs/eval/run/eval_report.h"
#include "jobs/eval/run/eval_runner.h"
#include "tests/eval/eval_test_util.h"

namespace ferry::eval::testing {

/// `Suite`: the fixture itself, so that each suite has its own folder.
template <class Suite>
class ModelSuiteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir(::testing::UnitTest::GetInstance()->current_test_suite()->name());
    Suite::write_models();
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  /// run_eval of `s`, expected to succeed (an empty report when it does not).
  static EvalReport eval_ok(const EvalSpec& s) {
    auto r = run_eval(s, nullptr, nullptr);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : EvalReport{};
  }

  static inline ScratchDir* dir_ = nullptr;
};

}  // namespace ferry::eval::testing
