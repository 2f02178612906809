// TinySuiteTest: the fixture of the tests that run `ferry` on the engine's own tiny
// models. SetUp makes ferry-tiny-models' suite in suite_ (an oracle target whose
// greedy next token is known, a drafter that always agrees with it, τ = B on every
// step, and one that never does, τ = 1, with their prompts); the rest is
// FerryHomeTest's. Needs the torch build (ferry-tiny-models).
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry::testing {

class TinySuiteTest : public FerryHomeTest {
 protected:
  /// `ferry_timeout_s`: how long one `ferry` command may take.
  explicit TinySuiteTest(int ferry_timeout_s = 240) : FerryHomeTest(ferry_timeout_s) {}

  void SetUp() override {
    auto r = run_process({bin_dir() + "/ferry-tiny-models", "suite", "--out", suite_.path()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  /// The suite drafters' block size B (the most tokens one step can accept).
  int block_size() const {
    return nlohmann::json::parse(read_text(suite_.file("oracle-agree/config.json")))["block_size"].get<int>();
  }

  TempDir suite_;
};

}  // namespace ferry::testing
