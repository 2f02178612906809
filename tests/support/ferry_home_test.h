// Test support: the base fixture of the tests that run the real `ferry` binary with
// a FERRY_HOME of their own (home_) and a folder for their workflows and logs
// (work_), both removed after the test; `ferry` is that home's CLI (ferry_cli.h).
// Tests only; one thread.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/ferry_cli.h"
#include "tests/support/process.h"

namespace ferry::testing {

class FerryHomeTest : public ::testing::Test {
 protected:
  /// `ferry_timeout_s`: how long one foreground `ferry` may take unless a call says.
  explicit FerryHomeTest(int ferry_timeout_s = 120) : ferry(home_.path(), ferry_timeout_s) {}

  std::map<std::string, std::string> env() const { return ferry.env(); }

  /// `ferry ARGS` in the background, its output to `log_name` in work_; its pid.
  pid_t spawn_ferry(std::vector<std::string> args, const std::string& log_name) {
    return ferry.spawn(std::move(args), work_.file(log_name));
  }

  /// Writes `text` to `name` in work_; its path.
  std::string write_workflow(const std::string& text, const std::string& name = "wf.yaml") {
    std::string path = work_.file(name);
    write_text(path, text);
    return path;
  }

  nlohmann::json status(const std::string& run) const { return ferry.status(run); }
  static nlohmann::json stage(const nlohmann::json& st, const std::string& name) { return FerryCli::stage(st, name); }

  TempDir home_;  // before `ferry`, which is made from its path
  TempDir work_;
  FerryCli ferry;
};

}  // namespace ferry::testing
