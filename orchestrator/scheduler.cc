#include "orchestrator/scheduler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cmath>
#include <csignal>
#include <iomanip>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>

#include "base/capped_log.h"
#include "base/clock.h"
#include "base/file_hash.h"
#include "base/file_util.h"
#include "base/terminal_text.h"
#include "jobs/stage_factory.h"
#include "orchestrator/attempt_env.h"
#include "orchestrator/hosts/transport_factory.h"
#include "orchestrator/resume_plan.h"
#include "orchestrator/stage_resolve.h"
#include "orchestrator/stage_slot.h"
#include "orchestrator/workflow_paths.h"
#include "workflows/dag.h"
#include "workflows/slurm_options.h"
#include "workflows/template.h"

namespace ferry {

using workflow::Stage;
using workflow::StageKind;

namespace {

constexpr double kMaxRetryBackoffS = 300;
constexpr int kCancelWatchMs = 300;
// After a second Ctrl-C the coordinator waits this long for hosts to confirm the
// kills, then leaves: a host that does not answer must not hold it.
constexpr int kHardCancelExitMs = 4000;

std::string random_token() {
  std::random_device rd;
  std::ostringstream s;
  s << std::hex << std::setfill('0') << std::setw(8) << rd() << std::setw(8) << rd();
  return s.str();
}

std::string seconds_text(double s) {
  std::ostringstream t;
  t << s << "s";
  return t.str();
}

}  // namespace

std::string Scheduler::log_path(const std::string& logs_dir, const std::string& run_id, const std::string& stage,
                                int attempt) {
  return logs_dir + "/" + run_id + "/" + stage + "/" + std::to_string(attempt) + ".log";
}

Scheduler::Scheduler(Store& store, workflow::Workflow wf, RunRecord run, SchedulerOptions options)
    : store_(store),
      wf_(std::move(wf)),
      run_(std::move(run)),
      options_(std::move(options)),
      signals_(io_, SIGINT, SIGTERM),
      cancel_watch_(io_),
      hard_cancel_deadline_(io_),
      idle_lanes_(static_cast<int64_t>(options_.lane_idle_close_s * 1000)),
      lane_sweep_(io_) {}

Scheduler::~Scheduler() {
  for (auto& [name, h] : hosts_) h->request_stop();
  for (auto& [name, h] : hosts_) h->stop();
}

void Scheduler::say(const std::string& stage, const std::string& message, const char* color) {
  if (!options_.out) return;
  double t = (now_ms() - started_ms_) / 1000.0;
  std::ostringstream line;
  line << "[" << std::fixed << std::setprecision(1) << std::setw(6) << t << "s] ";
  if (!stage.empty()) {
    if (options_.color && color) line << "\033[" << color << "m" << stage << "\033[0m ";
    else line << stage << " ";
  }
  line << escape_controls(message) << "\n";  // messages carry hosts' words
  *options_.out << line.str() << std::flush;
}

Status Scheduler::load(bool write) {
  auto records = store_.stages(run_.id);
  if (!records.ok()) return records.status();
  for (const auto& spec : wf_.stages) {
    auto st = std::make_unique<StageSlot>();
    st->spec = &spec;
    stages_[spec.name] = std::move(st);
  }
  for (const auto& rec : *records) {
    auto it = stages_.find(rec.name);
    if (it == stages_.end()) continue;
    StageSlot& st = *it->second;
    st.attempt = rec.attempt;
    st.token = rec.token;
    st.recorded_hash = rec.inputs_hash;
    st.started_ms = rec.started_ms;
    st.outputs = rec.outputs;
    if (rec.state == StageState::kSucceeded && options_.rerun.count(rec.name)) {
      st.state = StageState::kPending;  // the resume's plan: its definition or an upstream changed
    } else if (rec.state == StageState::kSucceeded) {
      st.state = StageState::kSucceeded;  // kept if its inputs are unchanged (checked when it comes up)
    } else if (reattachable(rec, *st.spec) && options_.restart.count(rec.name) && write) {
      // Changed while it ran, and the user asked to restart it: the next attempt's
      // start stops this one on its host (the agent's newest-attempt rule).
      auto r = store_.finish_attempt(run_.id, rec.name, rec.attempt, StageState::kCancelled, std::nullopt,
                                     "restarted by ferry resume --restart-changed: its definition changed");
      if (!r.ok()) return r.status();
      st.state = StageState::kPending;
      for (const std::string& h : {st.spec->host, st.spec->from.host, st.spec->to.host}) {
        if (!h.empty()) hosts_with_jobs_.insert(h);
      }
    } else if (reattachable(rec, *st.spec)) {
      // A command's job, an eval's worker on its host, or a copy (a direct copy's push
      // is a job on its source host; a relay continues from the receiver's journal):
      // same attempt, same token.
      st.state = StageState::kPending;
      st.reattach = true;
      for (const std::string& h : {st.spec->host, st.spec->from.host, st.spec->to.host}) {
        if (!h.empty()) hosts_with_jobs_.insert(h);
      }
    } else if (rec.state == StageState::kRunning && write) {
      // An in-process stage died with its coordinator: close that attempt honestly.
      auto r = store_.finish_attempt(run_.id, rec.name, rec.attempt, StageState::kFailed, std::nullopt,
                                     "the coordinator stopped while this attempt ran");
      if (!r.ok()) return r.status();
      st.state = StageState::kPending;
    } else {
      st.state = StageState::kPending;
    }
  }
  return Status();
}

Result<std::map<std::string, StageInputs>> Scheduler::planned_inputs() {
  FERRY_RETURN_IF_ERROR(load(/*write=*/false));
  std::map<std::string, StageInputs> out;
  for (const auto& spec : wf_.stages) {
    auto resolved = resolve_stage(*stages_[spec.name]);
    if (resolved.ok()) {
      out[spec.name].inputs = resolved->stored_json();
      out[spec.name].hash = stage_inputs_hash(*resolved);
    } else {
      out[spec.name].error = resolved.status().message();
    }
  }
  return out;
}

void Scheduler::note_store(const Status& s) {
  if (!s.ok()) store_failed(s);
}

std::string Scheduler::local_path(const std::string& path) { return resolve_local_path(path, run_.workflow_path); }

HostConnection& Scheduler::connection(const std::string& name) {
  auto it = hosts_.find(name);
  if (it != hosts_.end()) return *it->second;
  const workflow::Host* host = wf_.find_host(name);
  assert(host);
  ConnectionOptions opts = options_.connection;
  opts.give_up_s = host->give_up_s;
  // The first try decides whether the host exists at all, unless a job of ours may run there.
  opts.first_failure_is_final = !hosts_with_jobs_.count(name);
  const std::string workdir = host_workdir(*host);
  HostConnection::TransportFactory factory =
      options_.transports ? options_.transports(*host, workdir) : make_transport_factory(*host, workdir);
  auto conn = std::make_shared<HostConnection>(io_, name, std::move(factory), opts);
  conn->start([this, name](bool connected, const std::string& why) { on_host_state(name, connected, why); });
  hosts_[name] = conn;
  return *conn;
}

void Scheduler::on_host_state(const std::string& name, bool connected, const std::string& why) {
  note_store(
      store_.add_event(run_.id, "", connected ? "host.connected" : "host.unreachable", {{"host", name}, {"why", why}}));
  if (connected) {
    hosts_unproven_.erase(name);
    return;
  }
  if (!hosts_unproven_.count(name) || finished_) return;
  auto it = hosts_.find(name);
  if (it == hosts_.end() || !it->second->given_up()) {
    say("", "host '" + name + "' not reached yet: " + why + "; trying again", "33");
    return;
  }
  // A mistake (a typo'd address, a refused port, a refused key) found now, not
  // when the host's first stage comes up hours later.
  hosts_unproven_.erase(name);
  if (!start_failure_.empty()) return;
  start_failure_ = "host '" + name + "' cannot be reached: " + why;
  say("", start_failure_ + "; the run stops (`connect: when-needed` on a host lets it come later)", "31");
  // Nothing new starts; what runs elsewhere is stopped. A stage on this host fails
  // by itself, with the cause, as its calls fail.
  cancel_level_ = 1;
  for (auto& [stage, st] : stages_) {
    const Stage& s = *st->spec;
    const bool on_host = s.host == name || s.from.host == name || s.to.host == name;
    if (st->runner && !on_host) st->runner->cancel(false);
    if (st->state == StageState::kRetrying) {
      st->retry_timer->cancel();
      st->state = StageState::kPending;
    }
  }
  boost::asio::post(io_, [this] { schedule(); });
}

// Only hosts whose stages still have work: a resume does not reach hosts of kept stages.
void Scheduler::connect_hosts_at_start() {
  std::set<std::string> needed;
  for (const auto& spec : wf_.stages) {
    const StageSlot& st = *stages_[spec.name];
    if (st.state == StageState::kSucceeded && options_.rerun.count(spec.name) == 0) continue;
    for (const std::string& h : {spec.host, spec.from.host, spec.to.host, spec.watch.from.host}) {
      const workflow::Host* host = h.empty() ? nullptr : wf_.find_host(h);
      if (host && host->connect_at_start) needed.insert(h);
    }
  }
  for (const auto& h : needed) {
    if (hosts_.count(h)) continue;
    hosts_unproven_.insert(h);
    connection(h);
  }
}

void Scheduler::call_lane(const std::string& host, int lane, const std::string& op, nlohmann::json args,
                          std::string body, ReplyFn fn) {
  if (lane == 0) return connection(host).call(op, std::move(args), std::move(fn), std::move(body));
  const LaneId id{host, lane};
  idle_lanes_.call_started(id, now_ms());
  connection(host).call(
      op, std::move(args),
      [this, id, fn = std::move(fn)](Result<protocol::Frame> r) {
        idle_lanes_.call_ended(id, now_ms());
        fn(std::move(r));
      },
      std::move(body), lane);
}

// Every few seconds: the data lanes idle for lane_idle_close_s are closed (their
// channel and agent); the main links stay.
void Scheduler::close_idle_lanes() {
  const auto every =
      std::chrono::milliseconds(std::clamp<int64_t>(static_cast<int64_t>(options_.lane_idle_close_s * 250), 100, 5000));
  lane_sweep_.expires_after(every);
  lane_sweep_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || finished_) return;
    for (const auto& [host, lane] : idle_lanes_.take_idle(now_ms())) connection(host).close_lane(lane);
    close_idle_lanes();
  });
}

void Scheduler::schedule() {
  // After a store failure nothing new starts (it could not be recorded first).
  if (finished_ || !store_error_.ok()) return;
  bool changed = true;
  while (changed) {
    changed = false;
    for (const auto& spec : wf_.stages) {
      StageSlot& st = *stages_[spec.name];
      if (st.state != StageState::kPending && st.state != StageState::kSucceeded) continue;
      if (st.state == StageState::kSucceeded && st.confirmed) continue;
      bool ready = true;
      std::string blocked_by;
      for (const auto& need : spec.needs) {
        const StageState ns = stages_[need]->state;
        if (ns == StageState::kSucceeded && stages_[need]->confirmed) continue;
        if (ns == StageState::kSucceeded || stage_active(ns)) {
          ready = false;
        } else {
          blocked_by = need;
        }
      }
      if (!blocked_by.empty() && st.state == StageState::kPending) {
        st.state = StageState::kSkipped;
        note_store(store_.set_stage_state(run_.id, spec.name, StageState::kSkipped,
                                          "needs '" + blocked_by + "', which did not succeed"));
        say(spec.name, "skipped: needs '" + blocked_by + "', which did not succeed", "90");
        changed = true;
        continue;
      }
      if (!ready) continue;
      auto inputs = resolve_stage(st);
      if (st.state == StageState::kSucceeded) {
        // A resumed run keeps a success only if it would be run with the same inputs.
        if (inputs.ok() && stage_inputs_hash(*inputs) == st.recorded_hash) {
          st.confirmed = true;
          say(spec.name, "already succeeded with the same inputs; not run again", "90");
          changed = true;
          continue;
        }
        st.state = StageState::kPending;
      }
      if (cancel_level_ > 0) continue;
      start_attempt(st, st.reattach);
      changed = true;
    }
  }
  bool active = false;
  for (auto& [name, st] : stages_) {
    if (st->state == StageState::kRunning || st->state == StageState::kRetrying) active = true;
  }
  if (!active) finish_run();
}

void Scheduler::start_attempt(StageSlot& st, bool reattach) {
  if (!store_error_.ok()) return;
  const Stage& s = *st.spec;
  auto inputs = resolve_stage(st);
  if (!inputs.ok()) {
    int attempt = st.attempt + 1;
    std::string token = random_token();
    note_store(store_.begin_attempt(run_.id, s.name, attempt, token, ""));
    st.attempt = attempt;
    auto r =
        store_.finish_attempt(run_.id, s.name, attempt, StageState::kFailed, std::nullopt, inputs.status().message());
    if (!r.ok()) note_store(r.status());
    st.state = StageState::kFailed;
    say(s.name, "failed: " + inputs.status().message(), "31");
    return;
  }
  std::string hash = stage_inputs_hash(*inputs);
  if (!reattach) {
    st.attempt += 1;
    st.token = random_token();
    st.started_ms = now_ms();
    Status b = store_.begin_attempt(run_.id, s.name, st.attempt, st.token, hash);
    if (!b.ok()) {
      store_failed(b);
      st.state = StageState::kFailed;
      return;
    }
  }
  st.reattach = false;
  st.attempts_this_run += 1;
  st.state = StageState::kRunning;
  st.recorded_hash = hash;
  st.env = std::make_unique<AttemptEnv>(*this, s.name, st.attempt, s.log_max_bytes);
  int attempt = st.attempt;
  st.runner = make_stage_runner(*inputs, *st.env, AttemptId{run_.job_key(s.name), st.attempt, st.token});
  if (s.kind == StageKind::kCommand) {
    say(s.name,
        std::string(reattach ? "re-attaching to" : "starting") + " attempt " + std::to_string(attempt) + " on " +
            s.host,
        "34");
  } else {
    say(s.name,
        std::string(reattach ? "re-attaching to " : "starting ") + workflow::stage_kind_name(s.kind) + " attempt " +
            std::to_string(attempt) + (s.host.empty() ? "" : " on " + s.host),
        "34");
  }
  std::string name = s.name;
  st.timed_out = false;
  st.runner->start([this, name, attempt](StageOutcome o) { on_outcome(*stages_[name], attempt, std::move(o)); });
  arm_timeout(st, attempt);
}

ResolveContext Scheduler::resolve_context() const {
  return ResolveContext{wf_, run_, options_.ferry_home,
                        [this](const std::string& stage) -> const std::map<std::string, std::string>* {
                          auto it = stages_.find(stage);
                          return it == stages_.end() ? nullptr : &it->second->outputs;
                        }};
}

Result<std::string> Scheduler::resolve(const workflow::Text& text, bool shell_quote) const {
  return resolve_text(resolve_context(), text, shell_quote);
}

std::string Scheduler::host_workdir(const workflow::Host& host) const {
  return resolve_host_workdir_of(resolve_context(), host);
}

Result<StageSpec> Scheduler::resolve_stage(const StageSlot& st) const {
  return ferry::resolve_stage(resolve_context(), *st.spec);
}

// The runner says who enforces `timeout` (StageRunner::times_itself): a command's
// job and an eval's worker on a host are killed by their supervisor; a copy, an eval
// on this machine (a worker child, killed by the hard cancel) and a watching eval
// (its copies and workers are its parts) are timed here: the attempt is cancelled
// hard and ends timed_out. So is a Slurm job: its --time is whole minutes, rounded
// up, and Slurm ends it only at its next sweep after that; here the cancel
// (scancel) comes at `timeout` itself.
void Scheduler::arm_timeout(StageSlot& st, int attempt) {
  const Stage& s = *st.spec;
  if (s.timeout_s <= 0 || !st.runner || st.runner->times_itself()) return;
  int64_t left_ms = static_cast<int64_t>(s.timeout_s * 1000) - (now_ms() - st.started_ms);
  st.timeout_timer = std::make_unique<boost::asio::steady_timer>(io_);
  st.timeout_timer->expires_after(std::chrono::milliseconds(std::max<int64_t>(left_ms, 0)));
  std::string name = s.name;
  st.timeout_timer->async_wait([this, name, attempt](const boost::system::error_code& ec) {
    StageSlot& st = *stages_[name];
    if (ec || st.attempt != attempt || !st.runner || st.state != StageState::kRunning) return;
    st.timed_out = true;
    say(name, "timed out after " + seconds_text(st.spec->timeout_s) + "; stopping it", "33");
    st.runner->cancel(true);
  });
}

void Scheduler::on_outcome(StageSlot& st, int attempt, StageOutcome o) {
  const Stage& s = *st.spec;
  if (st.timeout_timer) st.timeout_timer->cancel();
  if (st.timed_out && o.state != StageOutcome::State::kSucceeded) {
    o.state = StageOutcome::State::kTimedOut;
    o.error = "timed out after " + seconds_text(s.timeout_s) + " (`timeout`)";
  }
  st.timed_out = false;
  // Declared outputs with a value are computed now, from the finished stage's world.
  if (o.state == StageOutcome::State::kSucceeded) {
    for (const auto& out : s.outputs) {
      if (!out.value) continue;
      auto v = resolve(*out.value, false);
      if (!v.ok()) {
        o.state = StageOutcome::State::kFailed;
        o.error = "output '" + out.name + "': " + v.status().message();
        break;
      }
      o.outputs[out.name] = *v;
    }
  }
  const StageState ended = stage_state_of(o.state);
  const std::string state = state_name(ended);
  std::optional<int> code;
  if (o.exit_code >= 0) code = o.exit_code;
  if (o.state == StageOutcome::State::kSucceeded) {
    Status so = store_.set_outputs(run_.id, s.name, o.outputs);
    if (so.ok()) so = store_.set_metrics(run_.id, s.name, o.metrics);
    note_store(so);
  } else if (!o.metrics.empty()) {
    note_store(store_.set_metrics(run_.id, s.name, o.metrics));
  }
  auto recorded = store_.finish_attempt(run_.id, s.name, attempt, ended, code, o.error);
  if (!recorded.ok()) note_store(recorded.status());
  st.runner.reset();
  if (o.state == StageOutcome::State::kSucceeded) {
    st.state = StageState::kSucceeded;
    st.outputs = o.outputs;
    st.confirmed = true;
    say(s.name, state + (code ? " (exit " + std::to_string(*code) + ")" : std::string()), "32");
    schedule();
    return;
  }
  bool retry_allowed =
      st.attempts_this_run <= s.retries && o.state != StageOutcome::State::kCancelled && cancel_level_ == 0;
  if (retry_allowed && !(s.retry_on.empty() && s.retry_on_causes.empty())) {
    const auto& causes = s.retry_on_causes;
    retry_allowed = (code && std::find(s.retry_on.begin(), s.retry_on.end(), *code) != s.retry_on.end()) ||
                    (!o.cause.empty() && std::find(causes.begin(), causes.end(), o.cause) != causes.end());
  }
  if (retry_allowed) {
    double delay = std::min(kMaxRetryBackoffS, s.retry_backoff_s * std::pow(2.0, st.attempts_this_run - 1));
    st.state = StageState::kRetrying;
    note_store(store_.set_stage_state(run_.id, s.name, StageState::kRetrying, o.error));
    say(s.name, state + ": " + o.error + "; retrying in " + std::to_string(delay).substr(0, 4) + "s", "33");
    st.retry_timer = std::make_unique<boost::asio::steady_timer>(io_);
    st.retry_timer->expires_after(std::chrono::milliseconds(static_cast<int64_t>(delay * 1000)));
    std::string name = s.name;
    st.retry_timer->async_wait([this, name](const boost::system::error_code& ec) {
      if (ec) return;
      StageSlot& st = *stages_[name];
      if (st.state != StageState::kRetrying) return;
      st.state = StageState::kPending;
      if (cancel_level_ > 0) {
        schedule();
        return;
      }
      start_attempt(st, false);
      schedule();
    });
    return;
  }
  st.state = ended;
  say(s.name, state + ": " + o.error, "31");
  schedule();
}

void Scheduler::store_failed(Status why) {
  if (!store_error_.ok() || finished_) return;
  store_error_ = std::move(why);
  say("",
      "stopping: " + store_error_.message() + "; the jobs keep running: `ferry resume " + run_.id +
          "` re-attaches once the state store works again",
      "31");
  io_.stop();  // after this handler; nothing is cancelled, as after a crash
}

void Scheduler::request_cancel(bool hard) {
  int level = hard ? 2 : 1;
  if (cancel_level_ >= level) return;
  cancel_level_ = level;
  note_store(store_.request_cancel(run_.id));
  say("", hard ? "cancelling hard (SIGKILL to running jobs)" : "cancelling (Ctrl-C again to kill)", nullptr);
  if (hard) {
    hard_cancel_deadline_.expires_after(std::chrono::milliseconds(kHardCancelExitMs));
    hard_cancel_deadline_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || finished_) return;
      abandoned_ = true;
      std::string waiting;
      for (auto& [name, st] : stages_) {
        if (st->state == StageState::kRunning) waiting += " " + name;
      }
      note_store(store_.add_event(run_.id, "", "run.abandoned", {{"stages", waiting}}));
      say("",
          "leaving now: no word from the hosts of" + waiting + "; their jobs stay recorded: `ferry resume " + run_.id +
              "` re-attaches, `ferry cancel " + run_.id + "` stops them",
          "31");
      io_.stop();
    });
  }
  for (auto& [name, st] : stages_) {
    if (st->runner) st->runner->cancel(hard);
    if (st->state == StageState::kRetrying) {
      st->retry_timer->cancel();
      st->state = StageState::kPending;
    }
  }
  boost::asio::post(io_, [this] { schedule(); });
}

void Scheduler::watch_cancel_flag() {
  cancel_watch_.expires_after(std::chrono::milliseconds(kCancelWatchMs));
  cancel_watch_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || finished_) return;
    auto r = store_.find_run(run_.id);
    if (r.ok() && r->cancel_requested && cancel_level_ == 0) request_cancel(false);
    watch_cancel_flag();
  });
}

void Scheduler::finish_run() {
  if (finished_) return;
  finished_ = true;
  hard_cancel_deadline_.cancel();
  bool all_ok = true;
  for (const auto& spec : wf_.stages) {
    StageSlot& st = *stages_[spec.name];
    if (st.state == StageState::kPending) {
      std::string why = !start_failure_.empty() ? start_failure_ : cancel_level_ ? "cancelled" : "never started";
      st.state = cancel_level_ && start_failure_.empty() ? StageState::kCancelled : StageState::kSkipped;
      note_store(store_.set_stage_state(run_.id, spec.name, st.state, why));
    }
    if (st.state != StageState::kSucceeded) all_ok = false;
  }
  final_state_ = all_ok ? RunState::kSucceeded : cancel_level_ ? RunState::kCancelled : RunState::kFailed;
  if (!start_failure_.empty()) final_state_ = RunState::kFailed;
  note_store(store_.set_run_state(run_.id, final_state_, 0, start_failure_));
  say("", "run " + run_.id + " " + state_name(final_state_), final_state_ == RunState::kSucceeded ? "32" : "31");
  signals_.cancel();
  cancel_watch_.cancel();
  lane_sweep_.cancel();
  for (auto& [name, h] : hosts_) h->request_stop();  // all at once, then wait
  for (auto& [name, h] : hosts_) h->stop();
  io_.stop();
}

Result<RunState> Scheduler::run() {
  started_ms_ = now_ms();
  FERRY_RETURN_IF_ERROR(load());
  FERRY_RETURN_IF_ERROR(store_.set_run_state(run_.id, RunState::kRunning, static_cast<int>(::getpid())));
  std::function<void(const boost::system::error_code&, int)> on_signal = [this, &on_signal](
                                                                             const boost::system::error_code& ec, int) {
    if (ec) return;
    request_cancel(cancel_level_ >= 1);
    signals_.async_wait(on_signal);
  };
  signals_.async_wait(on_signal);
  watch_cancel_flag();
  close_idle_lanes();
  if (options_.cancel_now) cancel_level_ = 1;
  boost::asio::post(io_, [this] {
    if (cancel_level_ > 0) {
      // Resume only to stop: re-attach running jobs and cancel them.
      for (auto& [name, st] : stages_) {
        if (st->reattach) start_attempt(*st, true);
      }
      cancel_level_ = 0;
      request_cancel(false);
      return;
    }
    connect_hosts_at_start();
    schedule();
  });
  try {
    io_.run();
  } catch (const std::exception& e) {
    // A handler met a reply of a shape nobody expected (a faulty or version-skewed
    // agent). Stop here without touching the jobs: they run on, detached, and
    // `ferry resume` re-attaches to them.
    return internal_error("run " + run_.id + " stopped on an unexpected agent reply (" + e.what() +
                          "); its jobs keep running: `ferry resume " + run_.id + "` re-attaches");
  }
  if (!store_error_.ok()) {
    return Status(store_error_.code(), store_error_.message() + "; run " + run_.id +
                                           " left running, its jobs untouched: `ferry resume " + run_.id +
                                           "` re-attaches");
  }
  if (abandoned_) return Status(StatusCode::kCancelled, "run " + run_.id + " left running after a second Ctrl-C");
  return final_state_;
}

}  // namespace ferry
