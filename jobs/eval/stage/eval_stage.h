// EvalStage: the drafter eval of a stage without `host:`, on the coordinator's
// machine, run as a `ferry-eval worker` child process (jobs/eval/tools/eval_worker.h)
// in a process group of its own, never inside the coordinator: a stage `timeout`
// or a cancel stops it wherever it is stuck (a tokenizer's regex, a blocking
// read, a huge load), and a crash there (SIGBUS on a checkpoint truncated while
// mapped, a stack overflow on a hostile file) fails the stage, not the run.
//
// The worker's output (progress lines marked kEvalProgressPrefix, then the
// readable report) is appended to the stage's log as it comes, the marked lines
// are also notes for the person watching; its result file becomes the outcome
// exactly as for an eval on a host (jobs/eval/stage/eval_outcome.h). Cancel: SIGTERM to the
// group (the engine stops between steps and reports), `hard` or timeout: SIGKILL.
// The worker dies with the coordinator (PR_SET_PDEATHSIG).
// io thread only, except the thread that reads the worker's output.
#pragma once

#include <memory>
#include <string>

#include "jobs/stage_runner.h"

namespace ferry {

/// Does not re-attach (StageRunner::reattaches): the worker dies with the coordinator,
/// and a resume closes the attempt as stopped.
class EvalStage : public StageRunnerBase<Reattach::kNo>, public std::enable_shared_from_this<EvalStage> {
 public:
  /// `spec`: the plugin's spec JSON (eval_plugin_api.h), paths already resolved;
  /// `worker`: the ferry-eval binary to run (local_eval_worker_path()).
  EvalStage(StageEnv& env, nlohmann::json spec, std::string worker);
  ~EvalStage() override;
  void start(std::function<void(StageOutcome)> done) override;
  void cancel(bool hard) override;

 private:
  struct Worker;  // the child, shared with the reading thread
  struct Exit;    // how it ended, and its result file's text
  void on_lines(const std::vector<std::string>& lines);
  void on_exit(const Exit& e);
  void finish(StageOutcome o);

  StageEnv& env_;
  nlohmann::json spec_;
  std::string worker_path_;
  std::function<void(StageOutcome)> done_;
  std::shared_ptr<Worker> worker_;
  std::string last_line_;  // the worker's last line, for an error when it leaves no result
  bool cancelled_ = false;
  bool finished_ = false;
  bool log_failed_ = false;  // a line could not be appended to the log
};

}  // namespace ferry
