#include "jobs/command/command_stage.h"

#include <boost/asio/post.hpp>
#include <chrono>

namespace ferry {
namespace {

int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

constexpr int64_t kLogChunk = 1 << 20;

}  // namespace

CommandStage::CommandStage(StageEnv& env, CommandSpec spec)
    : env_(env), spec_(std::move(spec)), timer_(env.io()) {}

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

void CommandStage::send_start() {
  nlohmann::json args = {{"job", spec_.job},         {"attempt", spec_.attempt}, {"token", spec_.token},
                         {"command", spec_.command}, {"env", spec_.env},         {"cwd", spec_.cwd},
                         {"timeout_s", spec_.timeout_s}, {"log_max", spec_.log_max}};
  if (!spec_.slurm.is_null()) args["slurm"] = spec_.slurm;
  if (!spec_.shell.empty()) args["shell"] = spec_.shell;
  // The command and env are the user's, of any size (a long heredoc, a param in
  // env): they ride in the body, which holds 64 MiB, not the 1 MiB header.
  auto body = protocol::move_fields_to_body(&args, {"command", "env"}, "the command and env of " + spec_.job);
  auto self = shared_from_this();
  if (!body.ok()) {
    boost::asio::post(env_.io(), [self, why = body.status().message()] {
      StageOutcome o;
      o.error = why;
      self->finish(o);
    });
    return;
  }
  // Lane 0 is the link call_agent uses.
  env_.call_agent_lane(spec_.host, 0, "job.start", args, std::move(body).value(), [self](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) {
      const std::string where = self->spec_.slurm.is_null() ? "" : "on Slurm host '" + self->spec_.host + "': ";
      return self->retry_or_fail(r.status(), where, [self] { self->send_start(); });
    }
    self->started_ = true;
    const auto& h = r->header;
    if (self->disconnected_since_ != 0) {
      self->disconnected_since_ = 0;
      self->env_.set_disconnected(0);
      self->env_.record_event("host.reconnected", {{"host", self->spec_.host}});
    }
    bool reattached = h.value("reattached", false);
    if (h.contains("stopped_attempt")) {
      // The host still ran an earlier attempt (given up on, or before a resume):
      // the agent stopped it before starting this one, so they never ran together.
      self->env_.record_event("attempt.stopped_older", {{"host", self->spec_.host}, {"older", h["stopped_attempt"]}});
      self->env_.note("attempt " + h["stopped_attempt"].dump() + " was still running on " + self->spec_.host +
                      "; stopped it before starting attempt " + std::to_string(self->spec_.attempt));
    }
    nlohmann::json launched = {
        {"host", self->spec_.host}, {"pid", h.value("pid", 0)}, {"attempt", self->spec_.attempt}};
    // Whether a cancel or a newer attempt reaches what the job starts with setsid
    // (a cgroup) or only its process group, and why (review F6).
    if (h.contains("contained_by")) launched["contained_by"] = h["contained_by"];
    if (h.value("containment_note", std::string()) != "") launched["containment_note"] = h["containment_note"];
    if (h.value("contained_by", std::string()) == "process group") self->say_uncontained(h);
    // The Slurm job id goes into the store with the first answer, before anything else can fail.
    if (h.contains("slurm_job")) launched["slurm_job"] = h["slurm_job"];
    self->env_.record_event(reattached ? "attempt.reattached" : "attempt.launched", launched);
    if (self->cancel_requested_) self->cancel(self->cancel_hard_);
    self->poll();
  });
}

// The host could not give the attempt a cgroup (a non-root user over SSH, whose
// session scope systemd does not delegate; review-4 F6): what the job starts with
// setsid or as a daemon outlives a cancel, a timeout or the next attempt's fence.
// Said where the user looks: `ferry status` (the stage's progress) and `ferry run`.
void CommandStage::say_uncontained(const nlohmann::json& launch_reply) {
  std::string why = launch_reply.value("containment_note", std::string());
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
  StageOutcome o;
  o.error = what + s.message();
  finish(o);
}

void CommandStage::read_log(std::function<void()> then) {
  auto self = shared_from_this();
  nlohmann::json args = {{"job", spec_.job}, {"attempt", spec_.attempt}, {"offset", env_.log_size()},
                         {"max", kLogChunk}};
  env_.call_agent(spec_.host, "log.read", args, [self, then](Result<protocol::Frame> r) {
    if (self->finished_) return;
    if (!r.ok()) return self->retry_or_fail(r.status(), "reading log: ", [self] { self->poll(); });
    // Only take bytes that start where our copy ends, or past bytes the host's log
    // dropped (over log_max): the copy marks that gap and moves on with the host.
    int64_t at = r->header.value("offset", int64_t{-1});
    int64_t dropped = r->header.value("dropped", int64_t{0});
    Status s;
    if (dropped > 0 && at - dropped == self->env_.log_size()) s = self->env_.skip_log(dropped);
    if (s.ok() && at == self->env_.log_size() && !r->body.empty()) s = self->env_.append_log(r->body);
    if (!s.ok()) {
      StageOutcome o;
      o.error = "writing log: " + s.message();
      self->finish(o);
      return;
    }
    if (r->header.value("size", int64_t{0}) > self->env_.log_size()) {
      self->read_log(then);  // more is waiting
      return;
    }
    then();
  });
}

void CommandStage::poll() {
  auto self = shared_from_this();
  read_log([self] {
    nlohmann::json args = {{"job", self->spec_.job}, {"attempt", self->spec_.attempt}, {"token", self->spec_.token}};
    self->env_.call_agent(self->spec_.host, "job.status", args, [self](Result<protocol::Frame> r) {
      if (self->finished_) return;
      if (!r.ok()) return self->retry_or_fail(r.status(), "job status: ", [self] { self->poll(); });
      if (self->disconnected_since_ != 0) {
        self->disconnected_since_ = 0;
        self->env_.set_disconnected(0);
        self->env_.record_event("host.reconnected", {{"host", self->spec_.host}});
      }
      self->on_status(r->header);
    });
  });
}

void CommandStage::on_status(const nlohmann::json& rec) {
  std::string state = rec.value("state", std::string());
  if (rec.contains("slurm_job")) show_slurm(rec);
  if (state == "running") {
    if (cancel_requested_) cancel(cancel_hard_);  // re-sent until the job is gone: a drop may have eaten it
    after(kPollMs, [self = shared_from_this()] { self->poll(); });
    return;
  }
  StageOutcome o;
  if (state == "lost") {
    o.error = "the job's supervisor on host '" + spec_.host + "' died without recording an exit code";
    if (rec.contains("slurm_job")) {
      o.error = "Slurm job " + rec.value("slurm_job", std::string()) + " ended without its exit record";
      o.cause = "LOST";
    }
    finish(o);
    return;
  }
  // Drain the log to the size the agent reported with the exit, then finish.
  auto self = shared_from_this();
  read_log([self, rec] {
    StageOutcome o;
    o.exit_code = rec.value("exit_code", -1);
    const nlohmann::json outputs = rec.value("outputs", nlohmann::json::object());
    for (auto& [k, v] : outputs.items()) {
      if (v.is_string()) o.outputs[k] = v.get<std::string>();
    }
    const std::string cause = rec.value("cause", std::string());
    if (!cause.empty()) {
      self->finish(self->slurm_outcome(rec, o));
      return;
    }
    if (rec.value("timed_out", false)) {
      o.state = StageOutcome::State::kTimedOut;
      o.error =
          "timed out after " + std::to_string(static_cast<int>(self->spec_.timeout_s)) + "s; process group killed";
    } else if (rec.value("cancelled", false)) {
      o.state = StageOutcome::State::kCancelled;
      o.error = "cancelled";
    } else if (o.exit_code == 0) {
      o.state = StageOutcome::State::kSucceeded;
      for (const auto& name : self->spec_.required_outputs) {
        if (!o.outputs.count(name)) {
          o.state = StageOutcome::State::kFailed;
          o.error = "exited 0 but did not write output '" + name + "' to $FERRY_OUTPUT";
          break;
        }
      }
    } else {
      int sig = rec.value("signal", 0);
      o.error = sig ? "killed by signal " + std::to_string(sig) : "exit code " + std::to_string(o.exit_code);
    }
    self->finish(o);
  });
}

// A Slurm job's end that Slurm caused: the cause is the stage's error and what
// `retry_on` matches; the exit code (if the script lived to record one) stays.
StageOutcome CommandStage::slurm_outcome(const nlohmann::json& rec, StageOutcome o) {
  o.cause = rec.value("cause", std::string());
  const std::string job = "Slurm job " + rec.value("slurm_job", std::string());
  const std::string note = rec.value("cause_note", std::string());
  o.state = StageOutcome::State::kFailed;
  if (o.cause == "TIMEOUT") {
    o.state = StageOutcome::State::kTimedOut;
    o.error = job + " hit its time limit (--time";
    if (spec_.slurm.contains("time_min")) o.error += "=" + spec_.slurm["time_min"].dump();
    o.error += ", Slurm TIMEOUT)";
  } else if (o.cause == "CANCELLED" && rec.value("cancelled", false)) {
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
void CommandStage::show_slurm(const nlohmann::json& rec) {
  nlohmann::json p = {{"slurm_job", rec.value("slurm_job", std::string())},
                      {"slurm_state", rec.value("slurm_state", std::string())},
                      {"slurm_reason", rec.value("slurm_reason", std::string())}};
  if (p == shown_slurm_) return;
  shown_slurm_ = p;
  env_.set_progress(p);
  const std::string st = p["slurm_state"], reason = p["slurm_reason"];
  if (st == "PENDING") {
    env_.note("queued in Slurm as job " + p["slurm_job"].get<std::string>() +
              (reason.empty() || reason == "None" ? "" : ": " + reason));
  }
  if (st == "RUNNING") env_.note("Slurm job " + p["slurm_job"].get<std::string>() + " running");
}

void CommandStage::cancel(bool hard) {
  cancel_requested_ = true;
  cancel_hard_ = cancel_hard_ || hard;
  if (!started_ || finished_) return;  // sent once the start is confirmed
  nlohmann::json args = {{"job", spec_.job}, {"attempt", spec_.attempt}, {"token", spec_.token}, {"hard", hard}};
  env_.call_agent(spec_.host, "job.cancel", args, [](Result<protocol::Frame>) {});
}

void CommandStage::finish(StageOutcome outcome) {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  auto done = std::move(done_);
  done(std::move(outcome));
}

}  // namespace ferry
