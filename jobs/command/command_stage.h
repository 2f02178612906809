// CommandStage: runs a shell command detached on a host through its agent, and
// follows it to its end.
//
// Start is idempotent (the agent re-attaches to the same attempt token), so a
// start lost to a dropped link is simply sent again, and `ferry resume` uses
// the very same path to re-attach to a job that kept running while the
// coordinator was dead. The log is pulled from the offset the coordinator
// already holds, so no line is lost or doubled across drops.
//
// io thread only (see stage_runner.h).
#pragma once

#include <boost/asio/steady_timer.hpp>

#include "base/capped_log.h"
#include "jobs/stage_runner.h"
#include "jobs/stage_spec.h"
#include "protocol/ops/job.h"

namespace ferry {

/// What a CommandStage runs: a command as a command stage resolves it (or as another
/// runner makes one: a direct copy's push, an eval's worker), the attempt it is, where.
struct CommandSpec {
  std::string host;
  AttemptId id;                           // id.job: unique per run and stage, "<run>.<stage>"
  CommandStageSpec job;                   // the command, its shell, cwd, env, timeout, required outputs, Slurm options
  int64_t log_max = kDefaultLogMaxBytes;  // the job's log on the host keeps its head and tail within this
};

/// Re-attaches (StageRunner::reattaches): the job goes on on its host; a start with the
/// same attempt and token follows it.
class CommandStage : public StageRunnerBase<Reattach::kYes>, public std::enable_shared_from_this<CommandStage> {
 public:
  CommandStage(StageEnv& env, CommandSpec spec);
  void start(std::function<void(StageOutcome)> done) override;
  void cancel(bool hard) override;
  /// A detached job's supervisor kills it at the timeout; a Slurm job is cancelled here.
  bool times_itself() const override { return spec_.job.slurm.is_null(); }

  /// Poll period while the job runs; named so tests and docs agree.
  static constexpr int kPollMs = 200;
  static constexpr int kRetryConnectMs = 1000;

 private:
  void send_start();
  void poll();
  void read_log(std::function<void()> then);
  protocol::JobRef job_ref() const;
  Result<protocol::JobStartArgs> start_args() const;
  void on_answer();
  void on_started(const protocol::JobStartReply& reply);
  void on_status(const protocol::JobRecord& record);
  StageOutcome exit_outcome(const protocol::JobRecord& record) const;
  void on_unavailable(const Status& s, std::function<void()> retry);
  void retry_or_fail(const Status& s, const std::string& what, std::function<void()> retry);
  void after(int ms, std::function<void()> fn);
  void finish(StageOutcome outcome);
  /// Ends the attempt as failed with `error`.
  void fail(const std::string& error);
  StageOutcome slurm_outcome(const protocol::JobRecord& rec, StageOutcome o) const;
  void show_slurm(const protocol::JobRecord& rec);
  void say_uncontained(const protocol::JobRecord& rec);

  StageEnv& env_;
  CommandSpec spec_;
  std::function<void(StageOutcome)> done_;
  boost::asio::steady_timer timer_;
  bool started_ = false;
  bool finished_ = false;
  bool cancel_requested_ = false;
  bool cancel_hard_ = false;
  int64_t disconnected_since_ = 0;
  nlohmann::json shown_slurm_;  // the Slurm state last put in progress
};

}  // namespace ferry
