// Test support: the `ferry` CLI of one FERRY_HOME, as the end-to-end tests drive it —
// a command, a run's status as JSON, one stage of it, and a stage's recorded events
// read from the state store with sqlite3 (as a person would look). Tests only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"

namespace ferry::testing {

class FerryCli {
 public:
  explicit FerryCli(std::string home, int timeout_s = 240) : home_(std::move(home)), timeout_s_(timeout_s) {}

  ProcessResult operator()(std::vector<std::string> args) const {
    args.insert(args.begin(), bin_dir() + "/ferry");
    return run_process(args, env(), timeout_s_);
  }
  /// The environment a `ferry` of this home runs in (for a coordinator the test spawns).
  std::map<std::string, std::string> env() const { return {{"FERRY_HOME", home_}, {"NO_COLOR", "1"}}; }
  nlohmann::json status(const std::string& run) const {
    return nlohmann::json::parse((*this)({"status", run, "--json"}).out, nullptr, false);
  }
  /// One stage of a status; an empty object when there is none of that name.
  static nlohmann::json stage(const nlohmann::json& status, const std::string& name) {
    for (const auto& s : status.value("stages", nlohmann::json::array())) {
      if (s["name"] == name) return s;
    }
    return nlohmann::json::object();
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

 private:
  std::string home_;
  int timeout_s_;
};

}  // namespace ferry::testing
