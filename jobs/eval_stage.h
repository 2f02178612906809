// EvalStage: the drafter eval inside the coordinator, on a worker thread of its
// own (never the io thread), through the eval plugin (eval_plugin.h).
//
// The worker posts progress lines and the result back to the io executor; cancel
// raises a flag the engine checks between steps. τ and friends become the
// stage's metrics and outputs; the progress lines and the readable report are
// appended to the stage's log, so `ferry logs RUN STAGE` shows them (as for an eval
// on a host); a failed gate fails the stage.
// io thread only, except the worker.
#pragma once

#include <atomic>
#include <memory>

#include "jobs/stage_runner.h"

namespace ferry {

class EvalStage : public StageRunner, public std::enable_shared_from_this<EvalStage> {
 public:
  /// `spec`: the plugin's spec JSON (eval_plugin_api.h), paths already resolved.
  EvalStage(StageEnv& env, nlohmann::json spec);
  void start(std::function<void(StageOutcome)> done) override;
  void cancel(bool hard) override;

 private:
  void finish(const std::string& result_json);

  StageEnv& env_;
  nlohmann::json spec_;
  std::function<void(StageOutcome)> done_;
  std::shared_ptr<std::atomic<bool>> cancel_ = std::make_shared<std::atomic<bool>>(false);
  bool finished_ = false;
  bool log_failed_ = false;  // a progress line could not be appended to the log
};

}  // namespace ferry
