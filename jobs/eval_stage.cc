#include "jobs/eval_stage.h"

#include <boost/asio/post.hpp>
#include <thread>

#include "jobs/eval_outcome.h"
#include "jobs/eval_plugin.h"
#include "jobs/eval_progress.h"

namespace ferry {

EvalStage::EvalStage(StageEnv& env, nlohmann::json spec) : env_(env), spec_(std::move(spec)) {}

void EvalStage::start(std::function<void(StageOutcome)> done) {
  done_ = std::move(done);
  auto plugin = load_eval_plugin();
  if (!plugin.ok()) {
    auto self = shared_from_this();
    std::string err = plugin.status().message();
    boost::asio::post(env_.io(), [self, err] { self->finish(nlohmann::json{{"ok", false}, {"error", err}}.dump()); });
    return;
  }
  env_.record_event("eval.started", spec_);
  auto self = shared_from_this();
  auto& io = env_.io();
  const EvalPlugin* p = *plugin;
  std::string spec_text = spec_.dump();
  auto cancel = cancel_;
  // The worker owns copies of everything it touches; results come back by post.
  std::thread([self, &io, p, spec_text, cancel] {
    struct Ctx {
      std::shared_ptr<EvalStage> self;
      boost::asio::io_context* io;
    } ctx{self, &io};
    char* out = p->run(spec_text.c_str(),
                       [](const char* line, void* c) {
                         auto* x = static_cast<Ctx*>(c);
                         std::string l = line;
                         boost::asio::post(*x->io, [s = x->self, l] {
                           if (s->finished_) return;
                           s->env_.note(l);
                           // In the log too, marked as an eval on a host marks them.
                           Status st = s->env_.append_log(kEvalProgressPrefix + l + "\n");
                           if (!st.ok() && !s->log_failed_) {  // said once: progress lines keep coming
                             s->log_failed_ = true;
                             s->env_.note("progress not kept in the log: " + st.message());
                           }
                         });
                       },
                       &ctx, cancel.get());
    std::string result = out ? out : "{\"ok\":false,\"error\":\"eval plugin returned nothing\"}";
    if (out) p->free(out);
    boost::asio::post(io, [self, result] { self->finish(result); });
  }).detach();
}

void EvalStage::cancel(bool hard) { cancel_->store(true); }

void EvalStage::finish(const std::string& result_json) {
  if (finished_) return;
  finished_ = true;
  StageOutcome o = eval_outcome(result_json, cancel_->load(), /*append_text=*/true, env_);
  auto done = std::move(done_);
  done(std::move(o));
}

}  // namespace ferry
