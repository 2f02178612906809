#include "jobs/watch/checkpoint_watch_stage.h"

#include <cstdio>

#include "jobs/eval_remote/remote_eval_factory.h"
#include "jobs/log_tap_env.h"
#include "jobs/stage_factory.h"
#include "jobs/states.h"

namespace ferry {

namespace {

// The env answers with the stored name ("" for a stage it does not know).
bool ended(const std::string& state) {
  auto s = parse_stage_state(state);
  return s && !stage_active(*s);
}

}  // namespace

// The env of one checkpoint's copy or eval: the stage's own (through LogTapEnv, which
// forwards every call), with every event named
// after the checkpoint (an eval.report also gets its step and content hash), and a
// log offset of its own, since each is a new job whose log starts at 0.
class CheckpointWatchStage::CheckpointEnv : public LogTapEnv {
 public:
  CheckpointEnv(StageEnv& env, const CheckpointFolder& c, std::string content_hash)
      : LogTapEnv(env, [](const std::string&) {}), checkpoint_(c), content_hash_(std::move(content_hash)) {}
  void record_event(const std::string& type, nlohmann::json detail) override {
    if (!detail.is_object()) detail = nlohmann::json{{"value", detail}};
    detail["checkpoint"] = checkpoint_.name;
    if (type == "eval.report") {
      detail["step"] = checkpoint_.step ? nlohmann::json(*checkpoint_.step) : nlohmann::json();
      detail["content_hash"] = content_hash_;
    }
    env_.record_event(type, std::move(detail));
  }
  Status append_log(const std::string& bytes) override {
    FERRY_RETURN_IF_ERROR(LogTapEnv::append_log(bytes));
    log_size_ += static_cast<int64_t>(bytes.size());
    return Status();
  }
  Status skip_log(int64_t n) override {
    FERRY_RETURN_IF_ERROR(LogTapEnv::skip_log(n));
    log_size_ += n;
    return Status();
  }
  int64_t log_size() override { return log_size_; }
  // The worker's progress (a line per response, per checkpoint) stays in the log; the
  // terminal hears the watch's own lines: copying, evaluating, τ.
  void note(const std::string& /*line*/) override {}
  void set_progress(nlohmann::json progress) override {
    if (progress.is_object()) progress["checkpoint"] = checkpoint_.name;
    env_.set_progress(std::move(progress));
  }

 private:
  CheckpointFolder checkpoint_;
  std::string content_hash_;
  int64_t log_size_ = 0;
};

CheckpointWatchStage::CheckpointWatchStage(StageEnv& env, std::string host, EvalStageSpec eval, AttemptId id)
    : env_(env),
      host_(std::move(host)),
      eval_(std::move(eval)),
      watch_(eval_.watch.value_or(WatchSpec())),
      id_(std::move(id)),
      timer_(env.io()),
      scan_(watch_.marker) {}

CheckpointWatchStage::~CheckpointWatchStage() = default;

void CheckpointWatchStage::start(std::function<void(StageOutcome)> done) {
  done_ = std::move(done);
  // What earlier attempts (or this one, before a coordinator crash) already did.
  for (const auto& d : env_.recorded_events("eval.report")) {
    std::string name = d.value("checkpoint", std::string());
    if (name.empty()) continue;
    done_names_.insert(name);
    std::string hash = d.value("content_hash", std::string());
    if (!hash.empty()) done_hashes_.emplace(hash, name);
  }
  for (const auto& d : env_.recorded_events("watch.same_content")) done_names_.insert(d.value("checkpoint", std::string()));
  env_.record_event("watch.started", {{"stage", watch_.stage},
                                      {"from", watch_.copy.from_host + ":" +
                                                   watch_.copy.from},
                                      {"already_done", done_names_.size()}});
  poll();
}

void CheckpointWatchStage::poll() {
  if (finished_) return;
  if (cancelled_) {
    StageOutcome o;
    o.state = StageOutcome::State::kCancelled;
    o.error = "cancelled";
    return finish(std::move(o));
  }
  // Read before listing: a checkpoint the trainer wrote just before it ended is in the listing.
  if (polls_since_followed_ended_ < 0 && ended(env_.stage_state(watch_.stage))) {
    polls_since_followed_ended_ = 0;
  }
  auto self = shared_from_this();
  env_.call_agent(watch_.copy.from_host, "fs.list", {{"path", watch_.copy.from}},
                  [self](Result<protocol::Frame> r) { self->on_listing(std::move(r)); });
}

void CheckpointWatchStage::on_listing(Result<protocol::Frame> r) {
  if (finished_) return;
  nlohmann::json files = nlohmann::json::array();
  if (r.ok()) {
    if (r->header.value("type", std::string()) == "dir") files = r->header.value("files", nlohmann::json::array());
  } else if (r.status().code() == StatusCode::kUnavailable) {
    return wait_then_poll();  // the trainer's host is away for now; the scan resumes when it is back
  } else if (r.status().code() != StatusCode::kNotFound) {
    StageOutcome o;
    o.error = "listing " + watch_.copy.from_host + ":" + watch_.copy.from +
              ": " + r.status().message();
    return finish(std::move(o));
  }  // not found: the trainer has not made the folder yet
  if (polls_since_followed_ended_ >= 0) ++polls_since_followed_ended_;
  auto complete = scan_.update(checkpoint_folders(files, watch_.pattern,
                                                  watch_.marker));
  queue_.clear();
  for (auto& c : complete) {
    if (!done_names_.count(c.name)) queue_.push_back(std::move(c));
  }
  work_or_wait();
}

void CheckpointWatchStage::work_or_wait() {
  if (cancelled_) return poll();  // which ends the stage as cancelled
  if (!queue_.empty()) return copy_next();
  const bool settled = scan_.incomplete().empty() || polls_since_followed_ended_ >= kWatchFinalPolls;
  if (polls_since_followed_ended_ > 0 && settled) {
    if (!scan_.incomplete().empty()) env_.record_event("watch.incomplete", {{"checkpoints", scan_.incomplete()}});
    return finish(final_outcome());
  }
  wait_then_poll();
}

void CheckpointWatchStage::wait_then_poll() {
  auto self = shared_from_this();
  timer_.expires_after(std::chrono::milliseconds(kWatchPollMs));
  timer_.async_wait([self](const boost::system::error_code&) { self->poll(); });
}

void CheckpointWatchStage::copy_next() {
  const CheckpointFolder c = queue_.front();
  queue_.erase(queue_.begin());
  CopyStageSpec in = watch_.copy;  // from_host, to_host and the route facts
  in.from += "/" + c.name;
  in.to = eval_.drafter + "/" + c.name;
  in.route = workflow::CopyRoute::kAuto;
  auto env = std::make_unique<CheckpointEnv>(env_, c, "");
  auto copy = std::make_shared<CopyStage>(*env, copy_spec(in, *env, AttemptId{id_.job + "." + c.name, id_.attempt, id_.token}));
  begin(std::move(copy), std::move(env));
  env_.note("copying " + c.name);
  auto self = shared_from_this();
  busy_ = true;
  current_->start([self, c](StageOutcome o) {
    self->busy_ = false;
    if (self->finished_) return;
    if (o.state != StageOutcome::State::kSucceeded) {
      o.error = c.name + ": copy: " + o.error;
      return self->finish(std::move(o));
    }
    const std::string hash = o.outputs["manifest_hash"];
    auto same = self->done_hashes_.find(hash);
    if (!hash.empty() && same != self->done_hashes_.end()) {
      self->current_env_->record_event("watch.same_content", {{"same_as", same->second}, {"content_hash", hash}});
      self->env_.note(c.name + " holds the same files as " + same->second + "; not evaluated again");
      self->done_names_.insert(c.name);
      ++self->same_content_;
      return self->work_or_wait();
    }
    if (self->cancelled_) return self->poll();
    self->evaluate(c, hash);
  });
}

void CheckpointWatchStage::evaluate(const CheckpointFolder& c, const std::string& content_hash) {
  EvalStageSpec in = eval_;
  in.drafter += "/" + c.name;
  in.watch.reset();
  in.min_tau.reset();  // the gate judges the last checkpoint only (final_outcome)
  in.min_ratio_to_reference.reset();
  auto env = std::make_unique<CheckpointEnv>(env_, c, content_hash);
  auto eval = make_remote_eval_stage(host_, in, *env,
                                     AttemptId{id_.job + "." + c.name + ".eval", id_.attempt, id_.token});
  begin(std::move(eval), std::move(env));
  env_.note("evaluating " + c.name);
  auto self = shared_from_this();
  busy_ = true;
  current_->start([self, c, content_hash](StageOutcome o) {
    self->busy_ = false;
    if (self->finished_) return;
    if (o.state != StageOutcome::State::kSucceeded) {
      o.error = c.name + ": " + o.error;
      return self->finish(std::move(o));
    }
    self->done_names_.insert(c.name);
    if (!content_hash.empty()) self->done_hashes_.emplace(content_hash, c.name);
    self->last_eval_ = std::move(o);
    self->have_eval_ = true;
    ++self->evaluated_;
    auto tau = self->last_eval_.metrics.find("tau");
    if (tau != self->last_eval_.metrics.end()) {
      char line[96];
      std::snprintf(line, sizeof line, ": τ %.3f", tau->second);
      self->env_.note(c.name + line);
    }
    self->work_or_wait();
  });
}

void CheckpointWatchStage::begin(std::shared_ptr<StageRunner> runner, std::unique_ptr<CheckpointEnv> env) {
  if (current_) retired_runners_.push_back(std::move(current_));
  if (current_env_) retired_envs_.push_back(std::move(current_env_));
  current_ = std::move(runner);
  current_env_ = std::move(env);
}

StageOutcome CheckpointWatchStage::final_outcome() {
  StageOutcome o;
  if (have_eval_) o = last_eval_;  // the last checkpoint's figures are the stage's
  o.metrics["checkpoints_evaluated"] = evaluated_;
  o.metrics["checkpoints_same_content"] = same_content_;
  o.outputs["checkpoints_evaluated"] = std::to_string(evaluated_);
  if (!have_eval_ && done_names_.empty()) {
    o.state = StageOutcome::State::kFailed;
    o.error = "the followed stage '" + watch_.stage + "' ended with no completed checkpoint in " +
              watch_.copy.from;
    return o;
  }
  o.state = StageOutcome::State::kSucceeded;
  o.error.clear();
  auto metric = [&](const char* k) {
    auto it = o.metrics.find(k);
    return it == o.metrics.end() ? std::optional<double>() : std::optional<double>(it->second);
  };
  if (eval_.min_tau && metric("tau") && *metric("tau") < *eval_.min_tau) {
    o.state = StageOutcome::State::kFailed;
    o.error = "gate failed: the last checkpoint's τ " + std::to_string(*metric("tau")) + " < min_tau " +
              std::to_string(*eval_.min_tau);
  }
  if (eval_.min_ratio_to_reference && metric("ratio_to_reference") &&
      *metric("ratio_to_reference") < *eval_.min_ratio_to_reference) {
    o.state = StageOutcome::State::kFailed;
    o.error = "gate failed: the last checkpoint's ratio to the reference " +
              std::to_string(*metric("ratio_to_reference")) + " < " + std::to_string(*eval_.min_ratio_to_reference);
  }
  return o;
}

void CheckpointWatchStage::cancel(bool hard) {
  cancelled_ = true;
  if (busy_) return current_->cancel(hard);  // its outcome ends the stage
  timer_.cancel();
}

void CheckpointWatchStage::finish(StageOutcome o) {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  if (cancelled_ && o.state != StageOutcome::State::kSucceeded) {
    o.state = StageOutcome::State::kCancelled;
    o.error = "cancelled";
  }
  auto done = std::move(done_);
  done(std::move(o));
}

}  // namespace ferry
