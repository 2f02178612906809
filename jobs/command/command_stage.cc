#include "jobs/command/command_stage.h"

#include <boost/asio/post.hpp>
#include <chrono>

#include "jobs/agent_call.h"
#include "protocol/ops/job.h"

namespace ferry {
namespace {

int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

constexpr int64_t kLogChunk = 1 << 20;

}  // namespace

CommandStage::CommandStage(StageEnv& env, CommandSpec spec) : env_(env), spec_(std::move(spec)), timer_(env.io()) {}

void CommandStage::start(std::function<void(StageOutcome)> done) {
  done_ = std::move(done);
  send_start();
}

void CommandStage::after(int ms, std::function<void()> fn) {
  timer_.expires_after(std::chrono::milliseconds(ms));
  auto self = shared_from_this();
  timer_.async_wait([self, fn = std::move(fn)](const boost::system::error_code& ec) {
    if (!ec && !self->finished_) fn();
  });
}

void CommandStage::on_unavailable(const Status& s, std::function<void()> retry) {
  if (s.code() == StatusCode::kDeadlineExceeded) {  // the host was given up on
    StageOutcome o;
    o.error = s.message();
    finish(o);
    return;
  }
  if (disconnected_since_ == 0) {
    disconnected_since_ = wall_ms();
    env_.set_disconnected(disconnected_since_);
    env_.record_event("host.disconnected", {{"host", spec_.host}, {"why", s.message()}});
  }
  after(kRetryConnectMs, std::move(retry));
}

protocol::JobRef CommandStage::job_ref() const { return {spec_.id.job, spec_.id.attempt, spec_.id.token}; }

// job.start's arguments; the sbatch options were written by this coordinator
// (stage_spec.h), and are read exactly as the agent will read them.
Result<protocol::JobStartArgs> CommandStage::start_args() const {
  protocol::JobStartArgs start;
  start.ref = job_ref();
  start.command = spec_.job.command;
  start.shell = spec_.job.shell;
  start.env = spec_.job.env;
  start.cwd = spec_.job.cwd;
  start.timeout_s = spec_.job.timeout_s;
  start.log_max = spec_.log_max;
  if (!spec_.job.slurm.is_null()) {
    auto slurm = protocol::SlurmSubmit::from_json(spec_.job.slurm);
    if (!slurm.ok()) return slurm.status();
    start.slurm = std::move(slurm).value();
  }
  return start;
}

void CommandStage::send_start() {
  auto self = shared_from_this();
  auto start = start_args();
  nlohmann::json args = start.ok() ? start->to_json() : nlohmann::json();
  // The command and env are the user's, of any size (a long heredoc, a param in
  // env): they ride in the body, which holds 64 MiB, not the 1 MiB header.
  Result<std::string> body =
      start.ok() ? protocol::move_fields_to_body(&args, {"command", "env"}, "the command and env of " + spec_.id.job)
                 : start.status();
  if (!body.ok()) {
    boost::asio::post(env_.io(), [self, why = body.status().message()] { self->fail(why); });
    return;
  }
  // Lane 0 is the link call_agent uses.
  env_.call_agent_lane(spec_.host, 0, protocol::JobStartArgs::kOp, args, std::move(body).value(),
                       read_reply_of<protocol::JobStartArgs>([self](Result<protocol::JobStartReply> reply) {
                         if (self->finished_) return;
                         if (!reply.ok()) {
                           const std::string where =
                               self->spec_.job.slurm.is_null() ? "" : "on Slurm host '" + self->spec_.host + "': ";
                           return self->retry_or_fail(reply.status(), where, [self] { self->send_start(); });
                         }
                         self->on_started(*reply);
                       }));
}

// An answer from the host after it was taken for disconnected: it is back.
void CommandStage::on_answer() {
  if (disconnected_since_ == 0) return;
  disconnected_since_ = 0;
  env_.set_disconnected(0);
  env_.record_event("host.reconnected", {{"host", spec_.host}});
}

void CommandStage::on_started(const protocol::JobStartReply& reply) {
  started_ = true;
  on_answer();
  if (reply.stopped_attempt) {
    // The host still ran an earlier attempt (given up on, or before a resume):
    // the agent stopped it before starting this one, so they never ran together.
    env_.record_event("attempt.stopped_older", {{"host", spec_.host}, {"older", *reply.stopped_attempt}});
    env_.note("attempt " + std::to_string(*reply.stopped_attempt) + " was still running on " + spec_.host +
              "; stopped it before starting attempt " + std::to_string(spec_.id.attempt));
  }
  const protocol::JobRecord& rec = reply.record;
  nlohmann::json launched = {{"host", spec_.host}, {"pid", rec.pid}, {"attempt", spec_.id.attempt}};
  // Whether a cancel or a newer attempt reaches what the job starts with setsid
  // (a cgroup) or only its process group, and why (review F6). The Slurm job id
  // goes into the store with the first answer, before anything else can fail.
  if (!rec.contained_by.empty()) launched.emplace("contained_by", rec.contained_by);
  if (!rec.containment_note.empty()) launched.emplace("containment_note", rec.containment_note);
  if (rec.is_slurm()) launched.emplace("slurm_job", rec.slurm_job);
  if (rec.contained_by == "process group") say_uncontained(rec);
  env_.record_event(reply.reattached ? "attempt.reattached" : "attempt.launched", launched);
  if (cancel_requested_) cancel(cancel_hard_);
  poll();
}

// The host could give the attempt neither a cgroup nor a supervisor that adopts
// (agents/adopted_processes.h: a kernel before 3.4): what the job starts with
// setsid or as a daemon outlives a cancel, a timeout or the next attempt's fence.
// Said where the user looks: `ferry status` (the stage's progress) and `ferry run`.
void CommandStage::say_uncontained(const protocol::JobRecord& rec) {
  const std::string& why = rec.containment_note;
  std::string text = "not contained: processes it starts with setsid or as daemons outlive a stop (no cgroup on " +
                     spec_.host + (why.empty() ? "" : ": " + why) + ")";
  env_.set_progress({{"uncontained", text}});
  env_.note(text);
}

// A link that is down or slow is waited out (on_unavailable), then `retry` runs;
// any other failure ends the attempt, named.
void CommandStage::retry_or_fail(const Status& s, const std::string& what, std::function<void()> retry) {
  if (s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded) {
    return on_unavailable(s, std::move(retry));
  }
  fail(what + s.message());
}

void CommandStage::fail(const std::string& error) {
  StageOutcome o;
  o.error = error;
  finish(o);
}

void CommandStage::read_log(std::function<void()> then) {
  auto self = shared_from_this();
  protocol::LogReadArgs args{spec_.id.job, spec_.id.attempt, env_.log_size(), kLogChunk};
  env_.call_agent(spec_.host, protocol::LogReadArgs::kOp, args.to_json(), [self, then](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) return self->retry_or_fail(r.status(), "reading log: ", [self] { self->poll(); });
    // Only take bytes that start where our copy ends, or past bytes the host's log
    // dropped (over log_max): the copy marks that gap and moves on with the host.
    auto read = protocol::LogReadReply::from_json(r->header);
    if (!read.ok()) return self->fail(read.status().message());
    const int64_t at = read->offset, dropped = read->dropped;
    Status s;
    if (dropped > 0 && at - dropped == self->env_.log_size()) s = self->env_.skip_log(dropped);
    if (s.ok() && at == self->env_.log_size() && !r->body.empty()) s = self->env_.append_log(r->body);
    if (!s.ok()) return self->fail("writing log: " + s.message());
    if (read->size > self->env_.log_size()) {
      self->read_log(then);  // more is waiting
      return;
    }
    then();
  });
}

void CommandStage::poll() {
  auto self = shared_from_this();
  read_log([self] {
    call_op(self->env_, self->spec_.host, self->job_ref(), [self](Result<protocol::JobRecord> rec) {
      if (self->finished_) return;
      if (!rec.ok()) return self->retry_or_fail(rec.status(), "job status: ", [self] { self->poll(); });
      self->on_answer();
      self->on_status(*rec);
    });
  });
}

void CommandStage::on_status(const protocol::JobRecord& rec) {
  if (rec.is_slurm()) show_slurm(rec);
  if (rec.state == protocol::JobState::kRunning) {
    if (cancel_requested_) cancel(cancel_hard_);  // re-sent until the job is gone: a drop may have eaten it
    after(kPollMs, [self = shared_from_this()] { self->poll(); });
    return;
  }
  if (rec.state == protocol::JobState::kLost) {
    StageOutcome o;
    o.error = "the job's supervisor on host '" + spec_.host + "' died without recording an exit code";
    if (rec.is_slurm()) {
      o.error = "Slurm job " + rec.slurm_job + " ended without its exit record";
      o.cause = "LOST";
    }
    finish(o);
    return;
  }
  // Drain the log to the size the agent reported with the exit, then finish.
  read_log([self = shared_from_this(), rec] { self->finish(self->exit_outcome(rec)); });
}

// How an exited job's attempt ended, from its record.
StageOutcome CommandStage::exit_outcome(const protocol::JobRecord& rec) const {
  StageOutcome o;
  o.exit_code = rec.exit_code;
  o.outputs = rec.outputs;
  if (!rec.cause.empty()) return slurm_outcome(rec, o);
  if (rec.timed_out) {
    o.state = StageOutcome::State::kTimedOut;
    o.error = "timed out after " + std::to_string(static_cast<int>(spec_.job.timeout_s)) + "s; process group killed";
  } else if (rec.cancelled) {
    o.state = StageOutcome::State::kCancelled;
    o.error = "cancelled";
  } else if (o.exit_code == 0) {
    o.state = StageOutcome::State::kSucceeded;
    for (const auto& name : spec_.job.required_outputs) {
      if (!o.outputs.count(name)) {
        o.state = StageOutcome::State::kFailed;
        o.error = "exited 0 but did not write output '" + name + "' to $FERRY_OUTPUT";
        break;
      }
    }
  } else {
    o.error =
        rec.signal ? "killed by signal " + std::to_string(rec.signal) : "exit code " + std::to_string(o.exit_code);
  }
  return o;
}

// A Slurm job's end that Slurm caused: the cause is the stage's error and what
// `retry_on` matches; the exit code (if the script lived to record one) stays.
StageOutcome CommandStage::slurm_outcome(const protocol::JobRecord& rec, StageOutcome o) const {
  o.cause = rec.cause;
  const std::string job = "Slurm job " + rec.slurm_job;
  const std::string& note = rec.cause_note;
  o.state = StageOutcome::State::kFailed;
  if (o.cause == "TIMEOUT") {
    o.state = StageOutcome::State::kTimedOut;
    o.error = job + " hit its time limit (--time";
    auto slurm = start_args();
    if (slurm.ok() && slurm->slurm && slurm->slurm->time_min > 0)
      o.error += "=" + std::to_string(slurm->slurm->time_min);
    o.error += ", Slurm TIMEOUT)";
  } else if (o.cause == "CANCELLED" && rec.cancelled) {
    o.state = StageOutcome::State::kCancelled;
    o.error = "cancelled (" + job + " scancelled)";
  } else if (o.cause == "CANCELLED") {
    o.error = job + " was cancelled by Slurm or an administrator, not by ferry (CANCELLED)";
  } else if (o.cause == "OUT_OF_MEMORY") {
    o.error = job + " ran out of memory (Slurm OUT_OF_MEMORY; raise slurm.mem)";
  } else if (o.cause == "NODE_FAIL" || o.cause == "BOOT_FAIL") {
    o.error = job + "'s node failed (Slurm " + o.cause + ")";
  } else if (o.cause == "PREEMPTED") {
    o.error = job + " was preempted (Slurm PREEMPTED)";
  } else if (o.cause == "LOST") {
    o.error = job + " is gone from Slurm without an exit record (LOST)";
  } else {
    o.error = job + " ended " + o.cause;
  }
  if (!note.empty()) o.error += ": " + note;
  return o;
}

// Where the job stands in Slurm, for `ferry status`: queued with Slurm's reason, or running.
void CommandStage::show_slurm(const protocol::JobRecord& rec) {
  nlohmann::json p = {
      {"slurm_job", rec.slurm_job}, {"slurm_state", rec.slurm_state}, {"slurm_reason", rec.slurm_reason}};
  if (p == shown_slurm_) return;
  shown_slurm_ = p;
  env_.set_progress(p);
  const std::string& st = rec.slurm_state;
  const std::string& reason = rec.slurm_reason;
  if (st == "PENDING") {
    env_.note("queued in Slurm as job " + rec.slurm_job + (reason.empty() || reason == "None" ? "" : ": " + reason));
  }
  if (st == "RUNNING") env_.note("Slurm job " + rec.slurm_job + " running");
}

void CommandStage::cancel(bool hard) {
  cancel_requested_ = true;
  cancel_hard_ = cancel_hard_ || hard;
  if (!started_ || finished_) return;  // sent once the start is confirmed
  protocol::JobCancelArgs args{job_ref(), hard};
  env_.call_agent(spec_.host, protocol::JobCancelArgs::kOp, args.to_json(), [](Result<protocol::Frame>) {});
}

void CommandStage::finish(StageOutcome outcome) {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  auto done = std::move(done_);
  done(std::move(outcome));
}

}  // namespace ferry
