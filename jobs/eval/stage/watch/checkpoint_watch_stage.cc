#include "jobs/eval/stage/watch/checkpoint_watch_stage.h"

#include <cstdio>

#include "base/clock.h"
#include "base/file_hash.h"
#include "base/peer_json.h"
#include "jobs/agent_call.h"
#include "jobs/copy/copy_stage.h"
#include "jobs/eval/stage/remote/remote_eval_factory.h"
#include "jobs/eval/stage/watch/last_checkpoint_gate.h"
#include "jobs/log_tap_env.h"
#include "jobs/states.h"

namespace ferry {

namespace {

// The env answers with the stored name ("" for a stage it does not know).
bool ended(const std::string& state) {
  auto s = parse_stage_state(state);
  return s && !stage_active(*s);
}

// One version of a checkpoint: its name and a hash of its files, sizes and mtimes.
std::string listing_hash(const CheckpointFolder& c) {
  return xxh128_hex(c.signature.data(), c.signature.size()).substr(0, 12);
}
std::string version(const std::string& name, const std::string& listing) { return name + "\n" + listing; }

}  // namespace

std::string checkpoint_key(const std::string& name) {
  bool plain = !name.empty() && name.size() <= 64 && name[0] != '.';
  for (char ch : name) {
    plain = plain && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                      ch == '_' || ch == '-');
  }
  return plain ? name : "ck-" + xxh128_hex(name.data(), name.size()).substr(0, 16);
}

// The env of one checkpoint's copy or eval: the stage's own (through LogTapEnv, which
// forwards every call), with every event named
// after the checkpoint (an eval.report also gets its step and content hash), and a
// log offset of its own, since each is a new job whose log starts at 0.
class CheckpointWatchStage::CheckpointEnv : public LogTapEnv {
 public:
  CheckpointEnv(StageEnv& env, const CheckpointFolder& c, std::string content_hash)
      : LogTapEnv(env, [](const std::string&) {}),
        checkpoint_(c),
        listing_(listing_hash(c)),
        content_hash_(std::move(content_hash)) {}
  void record_event(const std::string& type, nlohmann::json detail) override {
    if (!detail.is_object()) detail = nlohmann::json{{"value", detail}};
    detail["checkpoint"] = checkpoint_.name;
    detail["listing"] = listing_;
    if (type == "eval.report") {
      detail["step"] = checkpoint_.step ? nlohmann::json(*checkpoint_.step) : nlohmann::json();
      detail["content_hash"] = content_hash_;
      report_ = detail;
    }
    env_.record_event(type, std::move(detail));
  }
  /// The eval.report this env recorded, as stored (null before it has).
  const nlohmann::json& report() const { return report_; }
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
  std::string listing_;
  std::string content_hash_;
  nlohmann::json report_;
  int64_t log_size_ = 0;
};

CheckpointWatchStage::CheckpointWatchStage(StageEnv& env, std::string host, EvalStageSpec eval, int64_t log_max,
                                           AttemptId id)
    : env_(env),
      host_(std::move(host)),
      log_max_(log_max),
      eval_(std::move(eval)),
      watch_(eval_.watch.value_or(WatchSpec())),
      id_(std::move(id)),
      timer_(env.io()),
      scan_(watch_.marker) {}

CheckpointWatchStage::~CheckpointWatchStage() = default;

void CheckpointWatchStage::start(std::function<void(StageOutcome)> done) {
  done_ = std::move(done);
  // What earlier attempts (or this one, before a coordinator crash) already did: the
  // stage's history, which its counts and its gate are judged on as if one attempt
  // had done it all.
  for (const std::string type : {"eval.report", "watch.same_content", "watch.skipped"}) {
    for (const auto& d : env_.recorded_events(type)) {
      if (!d.is_object() || !d.contains("checkpoint") || !d["checkpoint"].is_string()) continue;
      const std::string name = d["checkpoint"].get<std::string>();
      if (d.contains("listing") && d["listing"].is_string())
        handled_.insert(version(name, d["listing"].get<std::string>()));
      else handled_names_.insert(name);
      if (type == "watch.skipped") {
        ++skipped_;
        last_skip_ = name + ": " + str_field(d, "during") + ": " + str_field(d, "cause");
        continue;
      }
      if (type == "eval.report") {
        ++evaluated_;
        last_report_ = d;  // in the order recorded: the last one evaluated
      } else {
        ++same_content_;
      }
      if (d.contains("content_hash") && d["content_hash"].is_string() &&
          !d["content_hash"].get<std::string>().empty()) {
        done_hashes_.emplace(d["content_hash"].get<std::string>(), name);
      }
    }
  }
  env_.record_event("watch.started", {{"stage", watch_.stage},
                                      {"from", watch_.copy.from_host + ":" + watch_.copy.from},
                                      {"already_done", evaluated_ + same_content_}});
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
  pages_.clear();
  list_page("");
}

void CheckpointWatchStage::list_page(const std::string& after) {
  auto self = shared_from_this();
  call_op(env_, watch_.copy.from_host, protocol::FsScanArgs{watch_.copy.from, watch_.pattern, after, kWatchPageEntries},
          [self](Result<protocol::FsScanReply> page) { self->on_page(std::move(page)); });
}

void CheckpointWatchStage::on_page(Result<protocol::FsScanReply> page) {
  if (finished_) return;
  if (!page.ok() && page.status().code() == StatusCode::kUnavailable) {
    return wait_then_poll();  // the trainer's host is away for now; the scan resumes when it is back
  }
  if (!page.ok() && page.status().code() != StatusCode::kNotFound) {
    StageOutcome o;
    o.error = "listing " + watch_.copy.from_host + ":" + watch_.copy.from + ": " + page.status().message();
    return finish(std::move(o));
  }
  if (!page.ok()) return on_listing(pages_);  // not found: the trainer has not made the folder yet
  if (page->now_ns > 0) host_ahead_ms_ = page->now_ns / 1000000 - now_ms();
  const bool more = !page->next.empty() && !page->folders.empty();
  for (auto& f : page->folders) pages_.push_back(std::move(f));
  if (more) return list_page(page->next);
  on_listing(pages_);
}

void CheckpointWatchStage::on_listing(const std::vector<protocol::ScannedFolder>& folders) {
  if (polls_since_followed_ended_ >= 0) ++polls_since_followed_ended_;
  queue_.clear();
  // Checkpoints older than the followed attempt are an earlier run's: never this one's.
  const int64_t since_ms = env_.stage_started_ms(watch_.stage);
  if (since_ms == 0 && polls_since_followed_ended_ < 0) return wait_then_poll();  // it has not started yet
  const int64_t since_ns = (since_ms + host_ahead_ms_ - kWatchClockSlackMs) * 1000000;
  std::vector<CheckpointFolder> current;
  std::vector<std::string> newly_ignored;
  for (auto& c : checkpoint_folders(folders, watch_.pattern, watch_.marker)) {
    if (since_ms > 0 && c.newest_mtime_ns < since_ns) {
      if (ignored_.insert(c.name).second) newly_ignored.push_back(c.name);
      continue;
    }
    current.push_back(std::move(c));
  }
  if (!newly_ignored.empty()) {
    env_.record_event("watch.ignored", {{"checkpoints", newly_ignored},
                                        {"why", "older than the start of the attempt of " + watch_.stage}});
    env_.note("ignoring " + std::to_string(newly_ignored.size()) + " checkpoint(s) older than " + watch_.stage +
              "'s attempt (an earlier run's)");
  }
  for (auto& c : scan_.update(current, mono_ms())) {
    if (!handled_.count(version(c.name, listing_hash(c))) && !handled_names_.count(c.name)) {
      queue_.push_back(std::move(c));
    }
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
  const std::string key = checkpoint_key(c.name);
  CopyStageSpec in = watch_.copy;  // from_host, to_host and the route facts
  in.from += "/" + c.name;
  in.to = eval_.drafter + "/" + key;
  in.route = workflow::CopyRoute::kAuto;
  auto env = std::make_unique<CheckpointEnv>(env_, c, "");
  // A version's own job keys: a rewritten checkpoint is a new copy, never the old one re-attached.
  auto copy = std::make_shared<CopyStage>(
      *env, copy_spec(in, *env, AttemptId{id_.job + "." + key + "." + listing_hash(c), id_.attempt, id_.token}));
  begin(std::move(copy), std::move(env));
  env_.note("copying " + c.name);
  auto self = shared_from_this();
  busy_ = true;
  current_->start([self, c](StageOutcome o) {
    self->busy_ = false;
    if (self->finished_) return;
    if (self->cancelled_) return self->poll();  // which ends the stage as cancelled
    if (o.state != StageOutcome::State::kSucceeded) return self->skip(c, "copy", o.error);
    const std::string hash = o.outputs["manifest_hash"];
    auto same = self->done_hashes_.find(hash);
    if (!hash.empty() && same != self->done_hashes_.end()) {
      self->current_env_->record_event("watch.same_content", {{"same_as", same->second}, {"content_hash", hash}});
      self->env_.note(c.name + " holds the same files as " + same->second + "; not evaluated again");
      self->handled_.insert(version(c.name, listing_hash(c)));
      ++self->same_content_;
      return self->work_or_wait();
    }
    self->evaluate(c, hash);
  });
}

void CheckpointWatchStage::evaluate(const CheckpointFolder& c, const std::string& content_hash) {
  const std::string key = checkpoint_key(c.name);
  EvalStageSpec in = eval_;
  in.drafter += "/" + key;
  in.watch.reset();
  in.min_tau.reset();  // the gate judges the last checkpoint only (final_outcome)
  in.min_ratio_to_reference.reset();
  in.gate_deferred = kJudgedOnTheLastCheckpoint;
  // The target's baseline and the reference decode the same for every checkpoint:
  // the first eval stores them on the eval's host, the later ones (after a resume
  // too) take them from there (jobs/eval/run/baseline_store.h).
  in.baseline_store = std::string(kWatchBaselineStore) + "/" + id_.job;
  auto env = std::make_unique<CheckpointEnv>(env_, c, content_hash);
  auto eval =
      make_remote_eval_stage(host_, in, log_max_, *env,
                             AttemptId{id_.job + "." + key + "." + listing_hash(c) + ".eval", id_.attempt, id_.token});
  begin(std::move(eval), std::move(env));
  env_.note("evaluating " + c.name);
  auto self = shared_from_this();
  busy_ = true;
  current_->start([self, c, content_hash](StageOutcome o) {
    self->busy_ = false;
    if (self->finished_) return;
    if (self->cancelled_) return self->poll();
    if (o.state != StageOutcome::State::kSucceeded) return self->skip(c, "eval", o.error);
    self->handled_.insert(version(c.name, listing_hash(c)));
    if (!content_hash.empty()) self->done_hashes_.emplace(content_hash, c.name);
    self->last_report_ = self->current_env_->report();  // judged as stored, as a later attempt would
    ++self->evaluated_;
    auto tau = o.metrics.find("tau");
    if (tau != o.metrics.end()) {
      char line[96];
      std::snprintf(line, sizeof line, ": τ %.3f", tau->second);
      self->env_.note(c.name + line);
    }
    self->work_or_wait();
  });
}

// One checkpoint's copy or eval failed: by default the watch records why and goes on
// from a new listing (the trainer may have rotated the rest of the queue away too).
void CheckpointWatchStage::skip(const CheckpointFolder& c, const std::string& during, const std::string& cause) {
  if (watch_.fail_on_error) {
    StageOutcome o;
    o.error = c.name + ": " + during + ": " + cause;
    return finish(std::move(o));
  }
  env_.record_event("watch.skipped",
                    {{"checkpoint", c.name}, {"listing", listing_hash(c)}, {"during", during}, {"cause", cause}});
  env_.note("skipped " + c.name + " (" + during + " failed: " + cause + ")");
  handled_.insert(version(c.name, listing_hash(c)));
  ++skipped_;
  last_skip_ = c.name + ": " + during + ": " + cause;
  queue_.clear();
  poll();
}

void CheckpointWatchStage::begin(std::shared_ptr<StageRunner> runner, std::unique_ptr<CheckpointEnv> env) {
  if (current_) retired_runners_.push_back(std::move(current_));
  if (current_env_) retired_envs_.push_back(std::move(current_env_));
  current_ = std::move(runner);
  current_env_ = std::move(env);
}

// The stage's history decides, not this attempt: the gate is judged on the last
// checkpoint's stored report whichever attempt evaluated it, and the verdict is
// recorded (eval.gate) so that `ferry report` shows the stage's, not the
// checkpoint's "judged on the last checkpoint".
StageOutcome CheckpointWatchStage::final_outcome() {
  StageOutcome o;
  if (!last_report_.is_null()) {
    o = judge_last_checkpoint(last_report_, eval_.min_tau, eval_.min_ratio_to_reference);
    const bool passed = o.state == StageOutcome::State::kSucceeded;
    const std::string message = str_field(o.report, "gate_message");
    env_.record_event(
        "eval.gate",
        {{"checkpoint", str_field(last_report_, "checkpoint")}, {"gate_passed", passed}, {"gate_message", message}});
    // The log's checkpoint sections each end "judged on the last checkpoint"; this is the judgement.
    Status logged = env_.append_log(std::string("\ngate: ") + (passed ? "PASSED" : "FAILED") +
                                    (message.empty() ? "" : " (" + message + ")") + "\n");
    if (!logged.ok()) env_.note("the gate's verdict not kept in the log: " + logged.message());
  } else {
    o.state = StageOutcome::State::kFailed;
    o.error =
        skipped_ > 0
            ? "no checkpoint could be evaluated: " + std::to_string(skipped_) + " skipped (last: " + last_skip_ + ")"
            : "the followed stage '" + watch_.stage + "' ended with no completed checkpoint in " + watch_.copy.from;
  }
  o.metrics["checkpoints_evaluated"] = evaluated_;
  o.metrics["checkpoints_same_content"] = same_content_;
  o.outputs["checkpoints_evaluated"] = std::to_string(evaluated_);
  o.metrics["checkpoints_skipped"] = skipped_;
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
