// Test support: the base fixture of the tests that run the real `ferry` binary with
// a FERRY_HOME of their own (home_) and a folder for their workflows and logs
// (work_), both removed after the test: `ferry` in the foreground or the
// background, a workflow file written, a run's status read. Tests only; one thread.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"

namespace ferry::testing {

class FerryHomeTest : public ::testing::Test {
 protected:
  /// `ferry_timeout_s`: how long one foreground `ferry` may take unless a call says.
  explicit FerryHomeTest(int ferry_timeout_s = 120) : ferry_timeout_s_(ferry_timeout_s) {}

  /// The environment every `ferry` of the test runs with: its home, no colour.
  std::map<std::string, std::string> env() const { return {{"FERRY_HOME", home_.path()}, {"NO_COLOR", "1"}}; }

  /// `ferry ARGS` to its end, killed after `timeout_s` (0: the fixture's bound).
  ProcessResult ferry(std::vector<std::string> args, int timeout_s = 0) {
    args.insert(args.begin(), bin_dir() + "/ferry");
    return run_process(args, env(), timeout_s > 0 ? timeout_s : ferry_timeout_s_);
  }

  /// `ferry ARGS` in the background, its output to `log_name` in work_; its pid.
  pid_t spawn_ferry(std::vector<std::string> args, const std::string& log_name) {
    args.insert(args.begin(), bin_dir() + "/ferry");
    return spawn_process(args, env(), work_.file(log_name));
  }

  /// Writes `text` to `name` in work_; its path.
  std::string write_workflow(const std::string& text, const std::string& name = "wf.yaml") {
    std::string path = work_.file(name);
    write_text(path, text);
    return path;
  }

  /// `ferry status RUN --json`, which must answer with JSON.
  nlohmann::json status(const std::string& run) {
    auto r = ferry({"status", run, "--json"}, kStatusTimeoutS);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  /// One stage of a status; an empty object when there is none of that name.
  static nlohmann::json stage(const nlohmann::json& st, const std::string& name) {
    if (st.is_object() && st.contains("stages")) {
      for (const auto& s : st["stages"]) {
        if (s["name"] == name) return s;
      }
    }
    return nlohmann::json::object();
  }

  static constexpr int kStatusTimeoutS = 30;

  TempDir home_;
  TempDir work_;

 private:
  int ferry_timeout_s_;
};

}  // namespace ferry::testing
