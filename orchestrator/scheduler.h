// Scheduler: runs one run of a workflow to its end on a Boost.Asio io thread.
//
// It walks the DAG, starts every stage whose needs succeeded (independent
// stages in parallel), retries failed attempts with exponential backoff as the
// stage allows, enforces cancel (first SIGINT graceful, second hard; `ferry
// cancel` from another process through the store's cancel flag), and records
// every change in the Store before acting on it.
//
// The same code resumes: stages that succeeded with the same inputs are kept,
// stages whose attempt was running are re-attached with the same attempt token
// (the agent answers with the job's real state), everything else runs again.
//
// Thread contract: run() blocks the calling thread, which becomes the io thread;
// all members are touched only there. Host connections each own a thread.
//
// Its parts: the state machine here (scheduler.cc); a stage's slot (stage_slot.h);
// the StageEnv each attempt gets (attempt_env.h); templates resolved into a stage's
// spec, and the inputs hash that decides what resume keeps (stage_resolve.h).
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "jobs/stage_spec.h"
#include "orchestrator/hosts/host_connection.h"
#include "orchestrator/hosts/idle_lanes.h"
#include "orchestrator/hosts/transport_factory.h"
#include "orchestrator/stage_resolve.h"
#include "orchestrator/store.h"
#include "workflows/model.h"

namespace ferry {

struct SchedulerOptions {
  std::string logs_dir;         // <logs_dir>/<run>/<stage>/<attempt>.log
  std::string ferry_home;       // default workdirs of local hosts live under it
  std::ostream* out = nullptr;  // progress lines; nullptr = quiet
  bool color = false;
  ConnectionOptions connection;
  bool cancel_now = false;  // `ferry cancel` on a run whose coordinator is gone
  /// A copy's data lanes unused this long are closed (idle_lanes.h); the next call reopens them.
  double lane_idle_close_s = 60;
  /// How each host's links are carried; empty = make_transport_factory (a local agent
  /// process or SSH). Unit tests put agents in their own process here.
  TransportFactoryMaker transports;
  /// A resume's plan (resume_plan.h): succeeded stages to run again, running ones to start afresh.
  std::set<std::string> rerun;
  std::set<std::string> restart;
};

/// A stage's definition as resolved now (StageSpec::stored_json), or why it cannot be yet.
struct StageInputs {
  nlohmann::json inputs;
  std::string hash;  // stage_inputs_hash, as a run records it
  std::string error;
};

class Scheduler {
 public:
  Scheduler(Store& store, workflow::Workflow wf, RunRecord run, SchedulerOptions options);
  ~Scheduler();

  /// Runs (or resumes) the run to its end. Returns the run's final state:
  /// succeeded, failed or cancelled; an error Status when the store fails.
  Result<RunState> run();
  /// After run(): a second Ctrl-C found hosts that did not answer in time, so the
  /// run was left as it stands (jobs running, recorded) for `ferry resume`. The
  /// caller should exit without waiting for those hosts' connections.
  bool abandoned() const { return abandoned_; }

  /// Each stage's definition resolved against the outputs in the store, running and
  /// writing nothing (a resume's plan compares them, resume_plan.h).
  Result<std::map<std::string, StageInputs>> planned_inputs();

  /// Where a stage attempt's log is kept by the coordinator.
  static std::string log_path(const std::string& logs_dir, const std::string& run_id, const std::string& stage,
                              int attempt);

 private:
  struct StageSlot;
  class AttemptEnv;

  /// The stages as the store has them; `write`: close in-process attempts that died with their coordinator.
  Status load(bool write = true);
  void schedule();
  void start_attempt(StageSlot& st, bool reattach);
  void on_outcome(StageSlot& st, int attempt, StageOutcome outcome);
  void arm_timeout(StageSlot& st, int attempt);
  void request_cancel(bool hard);
  /// A write to the store failed for good: stop driving the run as a crash would,
  /// leaving every job running and recorded for `ferry resume` (never cancelled).
  void store_failed(Status why);
  void watch_cancel_flag();
  void finish_run();
  /// Reaches every host a stage still needs, all at once, so an unreachable one is named now.
  void connect_hosts_at_start();
  void on_host_state(const std::string& host, bool connected, const std::string& why);
  HostConnection& connection(const std::string& host);
  /// A call on a data lane, counted so that an idle lane can be closed (close_idle_lanes).
  void call_lane(const std::string& host, int lane, const std::string& op, nlohmann::json args, std::string body,
                 ReplyFn fn);
  void close_idle_lanes();
  std::string local_path(const std::string& path);
  /// What stage_resolve.h's functions read: this run, and its stages' outputs so far.
  ResolveContext resolve_context() const;
  Result<std::string> resolve(const workflow::Text& text, bool shell_quote) const;
  std::string host_workdir(const workflow::Host& host) const;
  Result<StageSpec> resolve_stage(const StageSlot& st) const;
  void say(const std::string& stage, const std::string& message, const char* color = nullptr);
  /// A failed store write: kept, and the run stops at the next schedule() (cancelled hard).
  void note_store(const Status& s);

  Store& store_;
  workflow::Workflow wf_;
  RunRecord run_;
  SchedulerOptions options_;
  boost::asio::io_context io_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer cancel_watch_;
  std::map<std::string, std::unique_ptr<StageSlot>> stages_;
  std::map<std::string, std::shared_ptr<HostConnection>> hosts_;
  boost::asio::steady_timer hard_cancel_deadline_;
  IdleLanes idle_lanes_;
  boost::asio::steady_timer lane_sweep_;
  std::set<std::string> hosts_with_jobs_;  // hosts where a recorded attempt may still run (resume)
  std::set<std::string> hosts_unproven_;   // reached for at the start, not yet connected
  std::string start_failure_;              // a host the run needs could not be reached: the run fails
  int cancel_level_ = 0;                   // 0 none, 1 graceful, 2 hard
  bool finished_ = false;
  bool abandoned_ = false;
  Status store_error_;
  RunState final_state_ = RunState::kPending;
  int64_t started_ms_ = 0;
};

}  // namespace ferry
