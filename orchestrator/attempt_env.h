// Scheduler::AttemptEnv: the StageEnv of one stage attempt (jobs/stage_runner.h).
// Routes the stage's agent calls to the run's host connections, its events and
// progress to the store, its log to the coordinator's capped copy
// (<logs_dir>/<run>/<stage>/<attempt>.log), and its notes to the terminal.
// Internal to the scheduler (orchestrator/scheduler.cc); io thread only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/capped_log.h"
#include "jobs/stage_runner.h"
#include "orchestrator/scheduler.h"

namespace ferry {

class Scheduler::AttemptEnv : public StageEnv {
 public:
  AttemptEnv(Scheduler& s, std::string stage, int attempt, int64_t log_max);
  boost::asio::io_context& io() override;
  void call_agent(const std::string& host, const std::string& op, nlohmann::json args, ReplyFn fn) override;
  void call_agent_lane(const std::string& host, int lane, const std::string& op, nlohmann::json args,
                       std::string body, ReplyFn fn) override;
  std::string local_path(const std::string& path) override;
  void note(const std::string& line) override;
  void record_event(const std::string& type, nlohmann::json detail) override;
  /// The copy is capped as the host's log is (capped_log.h): a chatty job cannot
  /// fill the disk that holds ferry.db (review F18).
  Status append_log(const std::string& bytes) override;
  Status skip_log(int64_t n) override;
  int64_t log_size() override { return log_size_; }
  std::string stage_state(const std::string& stage) override;
  int64_t stage_started_ms(const std::string& stage) override;
  std::vector<nlohmann::json> recorded_events(const std::string& type) override;
  nlohmann::json stage_report(const std::string& stage) override;
  void set_disconnected(int64_t since_ms) override;
  /// Stored; the terminal hears of a copy's progress too, at most every kProgressLineMs
  /// (a terminal with colour every 500 ms).
  void set_progress(nlohmann::json progress) override;

 private:
  Status open_log();

  Scheduler& s_;
  std::string stage_;
  int attempt_;
  std::string log_path_;
  int64_t log_max_;
  int64_t log_size_ = 0;
  std::optional<CappedLogWriter> log_;  // opened at the first byte
  int64_t last_progress_line_ms_ = 0;
  nlohmann::json progress_ = nlohmann::json::object();  // this attempt's, merged
  static constexpr int64_t kProgressLineMs = 2000;
};

}  // namespace ferry
