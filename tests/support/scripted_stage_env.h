// ScriptedStageEnv: a StageEnv for unit tests of stage logic, like leveldb's
// in-memory Env. Each agent call is answered by a script (by default: never called
// back), posted on its own io_context; the log, the events and the call count are
// kept in memory for the test to read, and other stages' eval reports are what the
// test puts in stage_reports. io thread only, as every StageEnv.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "jobs/stage_runner.h"

namespace ferry::testing {

class ScriptedStageEnv : public StageEnv {
 public:
  /// The reply to one call; empty: the call is never answered.
  using Script = std::function<Result<protocol::Frame>(const std::string& op, const nlohmann::json& args)>;
  explicit ScriptedStageEnv(Script script = nullptr) : script_(std::move(script)) {}

  boost::asio::io_context& io() override { return io_; }
  void call_agent(const std::string& host, const std::string& op, nlohmann::json args, ReplyFn fn) override {
    call_agent_lane(host, 0, op, std::move(args), "", std::move(fn));
  }
  void call_agent_lane(const std::string&, int, const std::string& op, nlohmann::json args, std::string,
                       ReplyFn fn) override {
    ++calls;
    if (!script_) return;
    auto reply = script_(op, args);
    boost::asio::post(io_, [fn = std::move(fn), reply = std::move(reply)]() mutable { fn(std::move(reply)); });
  }
  std::string local_path(const std::string& path) override { return path; }
  void record_event(const std::string& type, nlohmann::json detail) override {
    events.emplace_back(type, detail.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  Status append_log(const std::string& bytes) override {
    log += bytes;
    return Status();
  }
  Status skip_log(int64_t) override { return Status(); }
  int64_t log_size() override { return static_cast<int64_t>(log.size()); }
  void set_disconnected(int64_t) override {}
  void note(const std::string&) override {}
  void set_progress(nlohmann::json) override {}

  nlohmann::json stage_report(const std::string& stage) override {
    auto it = stage_reports.find(stage);
    return it == stage_reports.end() ? nlohmann::json() : it->second;
  }

  int calls = 0;
  std::map<std::string, nlohmann::json> stage_reports;  // what stage_report() gives, by stage
  std::string log;
  std::vector<std::pair<std::string, std::string>> events;  // type, detail

 private:
  boost::asio::io_context io_;
  Script script_;
};

}  // namespace ferry::testing
