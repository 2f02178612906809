// RemoteEvalStage: an eval stage on a host (`kind: eval` with `host:`), run where
// the model is instead of inside the coordinator.
//
// Steps: ship the eval worker (`ferry-eval`, beside this ferry's binaries; it
// links libtorch dynamically) into the host's workdir under its file hash, the
// way the agent is installed, sending nothing when the host holds it already
// (or use the one the host's env names in $FERRY_EVAL_WORKER);
// fail at once when the checkpoints hold more bytes than the host has memory;
// ship the prompts when they come from the coordinator (`prompts:
// coordinator:PATH`); then run `ferry-eval worker` as a detached job through a
// CommandStage, so it has attempt tokens, re-attaches after drops and after
// `ferry resume`, obeys cancel and timeout, and its log streams into the stage's
// log. On a `scheduler: slurm` host that job is a Slurm job (the worker and the
// checkpoints on the filesystem the login node shares with the compute nodes). When the job ends, the worker's result
// JSON (the plugin's, see jobs/eval/run/eval_plugin_api.h) is read back through the agent and becomes the outcome
// exactly as for an eval in the coordinator (jobs/eval/stage/eval_outcome.h).
//
// A host that cannot run the worker (its dynamic loader finds no libtorch) ends
// the job within a second; the loader's words and what to install are the
// stage's error.
//
// io thread only (see stage_runner.h).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/capped_log.h"
#include "jobs/stage_runner.h"

namespace ferry {

class CommandStage;
class HostFileUpload;
class LogTapEnv;

struct RemoteEvalSpec {
  std::string host;
  AttemptId attempt;
  nlohmann::json engine;  // the plugin's spec; paths as the host sees them
  /// Coordinator files to ship as prompts: (where the engine JSON takes the host's
  /// path, as a JSON pointer: "/prompts", "/datasets/1/prompts"; the coordinator file).
  std::vector<std::pair<std::string, std::string>> coordinator_prompts;
  std::map<std::string, std::string> env;  // the host's and the stage's env
  double timeout_s = 0;
  int64_t log_max = kDefaultLogMaxBytes;  // the worker's job log on the host keeps its head and tail within this
  std::string worker;                     // the coordinator's ferry-eval binary
  nlohmann::json slurm;                   // on a Slurm host: the worker runs as a Slurm job with these sbatch options
};

/// Where ferry looks for the worker it ships: $FERRY_SEND_EVAL_WORKER, else ferry-eval
/// beside the running executable.
std::string local_eval_worker_path();

/// A host env variable naming an eval worker installed there, used instead of
/// sending this ferry's.
inline constexpr const char* kInstalledWorkerVar = "FERRY_EVAL_WORKER";

/// The libtorch the worker was built against (Debian 12's libtorch1.13).
inline constexpr const char* kEvalLibtorchVersion = "1.13";

/// Re-attaches (StageRunner::reattaches): the worker is a job on the host; a start with
/// the same attempt and token follows it.
class RemoteEvalStage : public StageRunnerBase<Reattach::kYes>, public std::enable_shared_from_this<RemoteEvalStage> {
 public:
  RemoteEvalStage(StageEnv& env, RemoteEvalSpec spec);
  ~RemoteEvalStage() override;
  void start(std::function<void(StageOutcome)> done) override;
  void cancel(bool hard) override;
  /// The worker is a detached job (its supervisor kills it at the timeout) but on Slurm.
  bool times_itself() const override { return spec_.slurm.is_null(); }

  static constexpr int kRetryMs = 1000;
  static constexpr size_t kLogTailLines = 20;
  static constexpr int64_t kResultPiece = 8 << 20;
  /// A result past this is refused before any of it is read (the engine's reports
  /// are a few MiB with thousands of responses).
  static constexpr int64_t kMaxResultBytes = int64_t{256} << 20;

 private:
  void install_worker();
  void check_memory();
  void ship_prompts(size_t next = 0);
  void start_job();
  void on_line(const std::string& line);
  void on_job_done(StageOutcome o);
  void read_result(int64_t size, std::string sofar);
  void fail(const std::string& why);
  void finish(StageOutcome o);
  std::string cannot_run_reason(const StageOutcome& o) const;

  StageEnv& env_;
  RemoteEvalSpec spec_;
  std::function<void(StageOutcome)> done_;
  std::string worker_dest_;  // on the host, relative to its workdir
  std::string result_path_;  // likewise
  std::shared_ptr<HostFileUpload> upload_;
  std::unique_ptr<LogTapEnv> job_env_;
  std::shared_ptr<CommandStage> job_;
  StageOutcome job_outcome_;
  std::deque<std::string> tail_;  // the job log's last lines, for errors
  bool cancelled_ = false;
  bool cancel_hard_ = false;
  bool finished_ = false;
};

}  // namespace ferry
