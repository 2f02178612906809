// Test support: the `ferry` CLI of one FERRY_HOME, as the end-to-end tests drive it —
// a command in the foreground or the background, a run's status as JSON, one stage of
// it, and a stage's recorded events read from the state store with sqlite3 (as a
// person would look). Tests only.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"

namespace ferry::testing {

class FerryCli {
 public:
  /// `timeout_s`: how long one foreground `ferry` may take unless a call says.
  explicit FerryCli(std::string home, int timeout_s = 240) : home_(std::move(home)), timeout_s_(timeout_s) {}

  /// `ferry ARGS` to its end, killed after `timeout_s` (0: the bound given at construction).
  ProcessResult operator()(std::vector<std::string> args, int timeout_s = 0) const {
    args.insert(args.begin(), bin_dir() + "/ferry");
    return run_process(args, env(), timeout_s > 0 ? timeout_s : timeout_s_);
  }
  /// `ferry ARGS` in the background, its output to `log_path`; its pid.
  pid_t spawn(std::vector<std::string> args, const std::string& log_path) const {
    args.insert(args.begin(), bin_dir() + "/ferry");
    return spawn_process(args, env(), log_path);
  }
  /// The environment a `ferry` of this home runs in: its home, no colour, and what
  /// with_env() added.
  std::map<std::string, std::string> env() const {
    std::map<std::string, std::string> e = {{"FERRY_HOME", home_}, {"NO_COLOR", "1"}};
    for (const auto& [key, value] : extra_env_) e[key] = value;
    return e;
  }
  /// This CLI with `extra` in its environment too (a later value wins).
  FerryCli with_env(const std::map<std::string, std::string>& extra) const {
    FerryCli cli = *this;
    for (const auto& [key, value] : extra) cli.extra_env_[key] = value;
    return cli;
  }

  /// `ferry status RUN --json`, which must answer with JSON.
  nlohmann::json status(const std::string& run) const {
    auto r = (*this)({"status", run, "--json"}, kStatusTimeoutS);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }
  /// One stage of a status; an empty object when there is none of that name.
  static nlohmann::json stage(const nlohmann::json& status, const std::string& name) {
    if (!status.is_object()) return nlohmann::json::object();
    for (const auto& s : status.value("stages", nlohmann::json::array())) {
      if (s["name"] == name) return s;
    }
    return nlohmann::json::object();
  }
  /// Whether `ferry logs RUN STAGE` shows `text` within `within` (asked every 20 ms:
  /// the stage's own output is the event waited on).
  bool wait_for_output(const std::string& run, const std::string& stage_name, const std::string& text,
                       std::chrono::milliseconds within) const {
    return wait_until([&] { return (*this)({"logs", run, stage_name}).out.find(text) != std::string::npos; }, within);
  }
  /// The details of a stage's events of `type` ("" = every type, as {type, detail}), in order.
  std::vector<nlohmann::json> events(const std::string& run, const std::string& stage_name,
                                     const std::string& type = "") const {
    std::string sql = "SELECT type, detail FROM events WHERE run_id='" + run + "' AND stage='" + stage_name + "'" +
                      (type.empty() ? "" : " AND type='" + type + "'") + " ORDER BY seq";
    auto r = run_process({"sqlite3", "-cmd", ".timeout 10000", "-json", home_ + "/ferry.db", sql});
    std::vector<nlohmann::json> out;
    auto rows = nlohmann::json::parse(r.out.empty() ? "[]" : r.out, nullptr, false);
    if (!rows.is_array()) return out;
    for (const auto& e : rows) {
      auto detail = nlohmann::json::parse(e.value("detail", "null"), nullptr, false);
      out.push_back(type.empty() ? nlohmann::json{{"type", e.value("type", "")}, {"detail", detail}} : detail);
    }
    return out;
  }

  static constexpr int kStatusTimeoutS = 30;

 private:
  std::string home_;
  int timeout_s_;
  std::map<std::string, std::string> extra_env_;
};

}  // namespace ferry::testing
