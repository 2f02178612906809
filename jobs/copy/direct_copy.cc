#include "jobs/copy/direct_copy.h"

#include "base/shell_quote.h"
#include "jobs/command/command_stage.h"
#include "jobs/log_tap_env.h"
#include "transfer/copy_plan.h"
#include "transfer/push_progress.h"
#include "transfer/push_spec.h"

namespace ferry {

// The StageEnv of the push's CommandStage (log_tap_env.h): the push's log lines
// carry its progress and its error, and the job's attempt events are named as the push's.
class DirectCopy::PushEnv : public LogTapEnv {
 public:
  PushEnv(StageEnv& env, DirectCopy& copy)
      : LogTapEnv(env, [&copy](const std::string& line) { copy.on_push_line(line); }) {}
  void record_event(const std::string& type, nlohmann::json detail) override {
    // attempt.launched / attempt.reattached of the push job: copy.push_launched / copy.push_reattached.
    if (type.rfind("attempt.", 0) == 0) return env_.record_event("copy.push_" + type.substr(8), std::move(detail));
    env_.record_event(type, std::move(detail));
  }
};

DirectCopy::DirectCopy(std::shared_ptr<CopyContext> c, AgentPlaces places)
    : c_(std::move(c)),
      places_(std::move(places)) {}

DirectCopy::~DirectCopy() = default;

void DirectCopy::start(bool reattach) {
  const CopyStageSpec& copy = c_->spec.copy;
  PushSpec ps;
  ps.from = copy.from;
  ps.workdir = places_.src_workdir;
  ps.to = copy.to;
  ps.from_host = copy.from_host;
  ps.to_host = copy.to_host;
  ps.address = copy.to_address;
  ps.port = copy.to_port;
  ps.user = copy.to_user;
  ps.dest_agent = places_.dest_exe;
  ps.dest_workdir = places_.dest_workdir;
  ps.streams = c_->lanes;
  ps.chunk_size = c_->spec.chunk_size;
  ps.give_up_s = copy.to_give_up_s;
  ps.owner = copy_owner(c_->spec.id.job, c_->spec.id.attempt, c_->spec.id.token);
  CommandStageSpec push;
  push.command = "exec " + shell_quote(places_.src_exe) + " push";
  push.env = {{"FERRY_PUSH_SPEC", ps.to_json().dump()}};
  push.required_outputs = {"manifest_hash"};
  if (reattach) c_->env.note("re-attaching to the direct copy running on " + copy.from_host);
  push_env_ = std::make_unique<PushEnv>(c_->env, *this);
  push_ = std::make_shared<CommandStage>(*push_env_, CommandSpec{copy.from_host, c_->spec.id, std::move(push)});
  auto self = shared_from_this();
  push_->start([self](StageOutcome o) { self->on_push_done(std::move(o)); });
  if (c_->cancelled) push_->cancel(false);
}

void DirectCopy::on_push_line(const std::string& line) {
  if (auto p = parse_push_progress(line)) {
    c_->bytes.done = p->bytes_done;
    c_->bytes.total = p->bytes_total;
    c_->bytes.sent = p->bytes_sent;
    c_->bytes.resent = p->bytes_resent;
    c_->bytes.skipped = p->bytes_skipped;
    push_rate_ = p->rate;
    push_seconds_ = p->elapsed_ms / 1000.0;
  } else if (auto e = parse_push_error(line)) {
    push_error_ = *e;
  }
}

void DirectCopy::on_push_done(StageOutcome o) {
  if (c_->finished) return;
  StageOutcome out;
  out.state = o.state;
  if (o.state == StageOutcome::State::kSucceeded) {
    out.outputs = {{"path", c_->spec.copy.to},
                   {"manifest_hash", o.outputs["manifest_hash"]},
                   {"bytes", o.outputs.count("bytes") ? o.outputs["bytes"] : std::to_string(c_->bytes.total)}};
    return c_->finish(std::move(out));
  }
  out.exit_code = o.exit_code;
  out.error = "direct copy " + c_->spec.copy.from_host + " → " + c_->spec.copy.to_host + ": " +
              (push_error_.empty() ? o.error : push_error_);
  c_->finish(std::move(out));
}

void DirectCopy::cancel(bool hard) { push_->cancel(hard); }  // the push's own end finishes the stage

}  // namespace ferry
