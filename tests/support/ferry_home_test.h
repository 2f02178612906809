// Test support: the base fixture of the tests that run the real `ferry` binary with
// a FERRY_HOME of their own (home_) and a folder for their workflows and logs
// (work_), both removed after the test. Tests only; one thread.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace ferry::testing {

class FerryHomeTest : public ::testing::Test {
 protected:
  /// The environment every `ferry` of the test runs with: its home, no colour.
  std::map<std::string, std::string> env() const { return {{"FERRY_HOME", home_.path()}, {"NO_COLOR", "1"}}; }

  /// `ferry ARGS` to its end, killed after `timeout_s`.
  ProcessResult ferry(std::vector<std::string> args, int timeout_s = 120) {
    args.insert(args.begin(), bin_dir() + "/ferry");
    return run_process(args, env(), timeout_s);
  }

  TempDir home_;
  TempDir work_;
};

}  // namespace ferry::testing
