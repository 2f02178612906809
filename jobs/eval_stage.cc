#include "jobs/eval_stage.h"

#include <boost/asio/post.hpp>
#include <iomanip>
#include <sstream>
#include <thread>

#include "jobs/eval_plugin.h"

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
                           if (!s->finished_) s->env_.note(l);
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
  StageOutcome o;
  auto r = nlohmann::json::parse(result_json, nullptr, false);
  if (r.is_discarded() || !r.value("ok", false)) {
    o.error = r.is_discarded() ? "eval plugin returned bad JSON" : r.value("error", std::string("eval failed"));
    if (cancel_->load()) {
      o.state = StageOutcome::State::kCancelled;
      o.error = "cancelled";
    }
    auto done = std::move(done_);
    done(std::move(o));
    return;
  }
  for (auto& [k, v] : r["metrics"].items()) {
    if (v.is_number()) o.metrics[k] = v.get<double>();
  }
  auto fmt = [](double x) {
    std::ostringstream s;
    s << std::setprecision(6) << x;
    return s.str();
  };
  for (const char* key : {"tau", "reference_tau", "speedup"}) {
    auto it = o.metrics.find(key);
    o.outputs[key] = it == o.metrics.end() ? "" : fmt(it->second);
  }
  o.report = r["report"];
  Status s = env_.append_log(r.value("text", std::string()) + "\n");
  (void)s;
  env_.record_event("eval.report", r["report"]);
  if (r.value("gate_passed", true)) {
    o.state = StageOutcome::State::kSucceeded;
  } else {
    o.state = StageOutcome::State::kFailed;
    o.error = "gate failed: " + r.value("gate_message", std::string());
  }
  auto done = std::move(done_);
  done(std::move(o));
}

}  // namespace ferry
