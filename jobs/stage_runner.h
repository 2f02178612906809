// StageRunner: one attempt of one stage, driven on the coordinator's io thread.
//
// The scheduler owns attempts, retries and the state store; a runner only does
// the work of its kind (command: through the host's agent; eval: on a worker
// thread) and reports one StageOutcome. What it may touch of the outside comes
// through StageEnv, so runners are testable with a fake env and know nothing of
// SQLite or SSH.
//
// Thread contract: start(), cancel() and every StageEnv call happen on the io
// thread; `done` is called there exactly once. Runners keep themselves alive
// with shared_from_this while work is pending.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "base/status.h"
#include "jobs/states.h"
#include "protocol/frame.h"

namespace ferry {

struct StageOutcome {
  enum class State { kSucceeded, kFailed, kTimedOut, kCancelled };
  State state = State::kFailed;
  int exit_code = -1;  // -1 when there is no process exit (eval, errors)
  std::string error;   // empty on success
  std::string cause;   // a Slurm job's end when Slurm ended it (TIMEOUT, NODE_FAIL...): `retry_on` may name it
  std::map<std::string, std::string> outputs;
  std::map<std::string, double> metrics;
  nlohmann::json report;  // kind-specific detail (eval report), may be null
};

/// The state an attempt ended in, and its stored name.
StageState stage_state_of(StageOutcome::State state);
const char* outcome_state_name(StageOutcome::State state);

using ReplyFn = std::function<void(Result<protocol::Frame>)>;

/// A call that failed for its link, not for what it asked: the host is not connected
/// now (kUnavailable), or the lane carrying the call closed under it (kCancelled).
/// The same call may succeed once the link is back, so runners retry it.
bool transient_link_failure(const Status& s);

/// Who an attempt is on a host, for runners that start detached jobs there (a
/// command; a direct copy's push): the agent re-attaches to the same job, attempt
/// and token, and refuses an older token.
struct AttemptId {
  std::string job;  // "<run>.<stage>"
  int attempt = 1;
  std::string token;
};

/// What a running attempt may use. Implemented by the scheduler.
class StageEnv {
 public:
  virtual ~StageEnv() = default;
  virtual boost::asio::io_context& io() = 0;
  /// Sends a request to the named host's agent; `fn` runs on the io thread.
  /// kUnavailable means "not connected now, try again"; kDeadlineExceeded means
  /// the host was given up on.
  virtual void call_agent(const std::string& host, const std::string& op, nlohmann::json args, ReplyFn fn) = 0;
  /// The same over one of several parallel connections ("lanes") to the host, each
  /// with its own session and thread; lane 0 is the connection call_agent uses.
  /// `body` rides as the frame's raw bytes.
  virtual void call_agent_lane(const std::string& host, int lane, const std::string& op, nlohmann::json args,
                               std::string body, ReplyFn fn) = 0;
  /// Where a coordinator-local path of the workflow (keep_local) resolves to.
  virtual std::string local_path(const std::string& path) = 0;
  /// An event row for this stage (written before the caller acts on it).
  virtual void record_event(const std::string& type, nlohmann::json detail) = 0;
  /// The coordinator's copy of this attempt's log: append, and its logical size
  /// (= the offset to read the agent's log from, so nothing is lost or doubled).
  virtual Status append_log(const std::string& bytes) = 0;
  /// The job's log dropped `n` bytes here (over its log_max, capped_log.h): the
  /// copy marks the gap and its size moves on by `n`.
  virtual Status skip_log(int64_t n) = 0;
  virtual int64_t log_size() = 0;
  /// The stage is cut off from its host (since_ms > 0) or back (0).
  virtual void set_disconnected(int64_t since_ms) = 0;
  /// A line for the person watching `ferry run` (an eval's progress).
  virtual void note(const std::string& line) = 0;
  /// Progress for `ferry status` (bytes, rate...); kind-specific.
  virtual void set_progress(nlohmann::json progress) = 0;
  /// The state of another stage of this run ("pending", "running", "succeeded"...;
  /// "" when unknown): a watching eval ends once the stage it follows has.
  virtual std::string stage_state(const std::string& /*stage*/) { return ""; }
  /// When another stage's newest attempt started (ms since the epoch, this clock; 0
  /// when it has not): a watching eval ignores checkpoints older than that.
  virtual int64_t stage_started_ms(const std::string& /*stage*/) { return 0; }
  /// The details of this stage's recorded events of `type`, oldest first, over all its
  /// attempts: what a resumed stage has already done.
  virtual std::vector<nlohmann::json> recorded_events(const std::string& /*type*/) { return {}; }
  /// The eval report another stage of this run recorded last (its eval.report event;
  /// null when it has none): a sharded eval's merge reads its shards' reports.
  virtual nlohmann::json stage_report(const std::string& /*stage*/) { return nullptr; }
};

class StageRunner {
 public:
  virtual ~StageRunner() = default;
  virtual void start(std::function<void(StageOutcome)> done) = 0;
  /// First call: graceful (SIGTERM to the job's group); `hard`: SIGKILL.
  virtual void cancel(bool hard) = 0;
  /// Whether the attempt enforces the stage's `timeout` itself (a detached job's
  /// supervisor kills it then); otherwise the scheduler cancels it hard at the timeout.
  virtual bool times_itself() const { return false; }
  /// Whether `ferry resume` re-attaches to an attempt of this runner that was running
  /// when its coordinator stopped (the work goes on without it: a job on a host, a
  /// copy), rather than closing it as stopped with the coordinator (a child of it).
  /// Each runner states it once, as its StageRunnerBase's kReattaches; the resume asks
  /// before any runner exists, through stage_reattaches (stage_factory.h).
  virtual bool reattaches() const { return false; }
};

enum class Reattach { kNo, kYes };

/// A runner kind's base: it states once whether `ferry resume` re-attaches to it, as
/// kReattaches (read by stage_reattaches before any runner exists), and reattaches()
/// answers from that.
template <Reattach R>
class StageRunnerBase : public StageRunner {
 public:
  static constexpr bool kReattaches = R == Reattach::kYes;
  bool reattaches() const final { return kReattaches; }
};

}  // namespace ferry
