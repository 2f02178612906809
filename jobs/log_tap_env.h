// LogTapEnv: the StageEnv of a job a stage runs on its behalf (a direct copy's
// push, an eval's worker): every call goes to the stage's own env, and the job's
// log, as it is appended, is also handed over line by line, so the stage can read
// the job's progress and its last words. io thread only, like any StageEnv.
#pragma once

#include <algorithm>
#include <functional>
#include <string>

#include "jobs/stage_runner.h"

namespace ferry {

class LogTapEnv : public StageEnv {
 public:
  LogTapEnv(StageEnv& env, std::function<void(const std::string&)> on_line)
      : env_(env), on_line_(std::move(on_line)) {}
  boost::asio::io_context& io() override { return env_.io(); }
  void call_agent(const std::string& host, const std::string& op, nlohmann::json args, ReplyFn fn) override {
    env_.call_agent(host, op, std::move(args), std::move(fn));
  }
  void call_agent_lane(const std::string& host, int lane, const std::string& op, nlohmann::json args,
                       std::string body, ReplyFn fn) override {
    env_.call_agent_lane(host, lane, op, std::move(args), std::move(body), std::move(fn));
  }
  std::string local_path(const std::string& path) override { return env_.local_path(path); }
  void record_event(const std::string& type, nlohmann::json detail) override {
    env_.record_event(type, std::move(detail));
  }
  Status append_log(const std::string& bytes) override {
    FERRY_RETURN_IF_ERROR(env_.append_log(bytes));
    // Only the new bytes are searched: a log of `\r` progress and no newline costs
    // its length once, not once per read.
    size_t start = 0;
    for (size_t nl; (nl = bytes.find('\n', start)) != std::string::npos; start = nl + 1) {
      keep(bytes, start, nl);
      on_line_(partial_);
      partial_.clear();
    }
    keep(bytes, start, bytes.size());
    return Status();
  }
  Status skip_log(int64_t n) override {
    partial_.clear();  // its end was dropped
    return env_.skip_log(n);
  }
  int64_t log_size() override { return env_.log_size(); }
  void set_disconnected(int64_t since_ms) override { env_.set_disconnected(since_ms); }
  void note(const std::string& line) override { env_.note(line); }
  void set_progress(nlohmann::json progress) override { env_.set_progress(std::move(progress)); }
  std::string stage_state(const std::string& stage) override { return env_.stage_state(stage); }
  int64_t stage_started_ms(const std::string& stage) override { return env_.stage_started_ms(stage); }
  std::vector<nlohmann::json> recorded_events(const std::string& type) override { return env_.recorded_events(type); }
  nlohmann::json stage_report(const std::string& stage) override { return env_.stage_report(stage); }

 protected:
  StageEnv& env_;

 private:
  /// A line longer than this is handed over cut to its first kMaxLineBytes: the
  /// readers look for short progress lines, and the coordinator's memory stays bounded.
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  void keep(const std::string& bytes, size_t from, size_t to) {
    partial_.append(bytes, from, std::min(to - from, kMaxLineBytes - partial_.size()));
  }

  std::function<void(const std::string&)> on_line_;
  std::string partial_;  // a line the log read cut in two (at most kMaxLineBytes)
};

}  // namespace ferry
