#include "orchestrator/attempt_env.h"

#include "base/clock.h"
#include "base/file_util.h"
#include "orchestrator/stage_slot.h"
#include "orchestrator/status_view.h"

namespace ferry {

Scheduler::AttemptEnv::AttemptEnv(Scheduler& s, std::string stage, int attempt, int64_t log_max)
    : s_(s), stage_(std::move(stage)), attempt_(attempt),
      log_path_(Scheduler::log_path(s.options_.logs_dir, s.run_.id, stage_, attempt)), log_max_(log_max),
      log_size_(capped_log_size(log_path_)) {}

boost::asio::io_context& Scheduler::AttemptEnv::io() { return s_.io_; }

void Scheduler::AttemptEnv::call_agent(const std::string& host, const std::string& op, nlohmann::json args,
                                       ReplyFn fn) {
  s_.connection(host).call(op, std::move(args), std::move(fn));
}

void Scheduler::AttemptEnv::call_agent_lane(const std::string& host, int lane, const std::string& op,
                                            nlohmann::json args, std::string body, ReplyFn fn) {
  s_.call_lane(host, lane, op, std::move(args), std::move(body), std::move(fn));
}

std::string Scheduler::AttemptEnv::local_path(const std::string& path) { return s_.local_path(path); }

void Scheduler::AttemptEnv::note(const std::string& line) { s_.say(stage_, line, "90"); }

void Scheduler::AttemptEnv::record_event(const std::string& type, nlohmann::json detail) {
  detail["attempt"] = attempt_;
  s_.note_store(s_.store_.add_event(s_.run_.id, stage_, type, detail));
  if (type == "host.disconnected") s_.say(stage_, "lost its host: " + detail.value("why", std::string()), "33");
  if (type == "host.reconnected") s_.say(stage_, "host is back", "36");
  if (type == "attempt.reattached") s_.say(stage_, "re-attached to the running job", "36");
}

Status Scheduler::AttemptEnv::append_log(const std::string& bytes) {
  FERRY_RETURN_IF_ERROR(open_log());
  FERRY_RETURN_IF_ERROR(log_->append(bytes));
  log_size_ = log_->size();
  return Status();
}

Status Scheduler::AttemptEnv::skip_log(int64_t n) {
  FERRY_RETURN_IF_ERROR(open_log());
  FERRY_RETURN_IF_ERROR(log_->skip(n));
  log_size_ = log_->size();
  return Status();
}

std::string Scheduler::AttemptEnv::stage_state(const std::string& stage) {
  auto it = s_.stages_.find(stage);
  return it == s_.stages_.end() ? "" : state_name(it->second->state);
}

int64_t Scheduler::AttemptEnv::stage_started_ms(const std::string& stage) {
  auto it = s_.stages_.find(stage);
  return it == s_.stages_.end() ? 0 : it->second->started_ms;
}

std::vector<nlohmann::json> Scheduler::AttemptEnv::recorded_events(const std::string& type) {
  std::vector<nlohmann::json> out;
  auto events = s_.store_.events(s_.run_.id, stage_);
  if (!events.ok()) return out;
  for (const auto& e : *events) {
    if (e.type == type) out.push_back(e.detail);
  }
  return out;
}

nlohmann::json Scheduler::AttemptEnv::stage_report(const std::string& stage) {
  auto events = s_.store_.events(s_.run_.id, stage);
  if (!events.ok()) return nullptr;
  for (auto it = events->rbegin(); it != events->rend(); ++it) {
    if (it->type == "eval.report") return it->detail;
  }
  return nullptr;
}

void Scheduler::AttemptEnv::set_disconnected(int64_t since_ms) {
  s_.note_store(s_.store_.set_disconnected(s_.run_.id, stage_, since_ms));
}

void Scheduler::AttemptEnv::set_progress(nlohmann::json progress) {
  // Merged into what this attempt reported before: an eval on a Slurm host reports its
  // job's state and its prompts through the same stage, and neither hides the other.
  if (progress.is_object()) {
    progress_.update(progress);
  } else {
    progress_ = nlohmann::json::object();
  }
  s_.note_store(s_.store_.set_progress(s_.run_.id, stage_, progress_));
  const int64_t now = now_ms();
  const bool tty = s_.options_.color;
  if (!progress.contains("bytes_total") || now - last_progress_line_ms_ < (tty ? 500 : kProgressLineMs)) return;
  last_progress_line_ms_ = now;
  s_.say(stage_, copy_progress_line(progress, tty), "90");
}

Status Scheduler::AttemptEnv::open_log() {
  if (log_) return Status();
  FERRY_RETURN_IF_ERROR(make_dirs(dirname_of(log_path_)));
  auto w = CappedLogWriter::open(log_path_, log_max_);
  if (!w.ok()) return w.status();
  log_ = std::move(*w);
  return Status();
}

}  // namespace ferry
