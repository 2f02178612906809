// Where a long eval stands while it decodes: prompts done of the total over its
// decoding runs (candidate, then reference and baseline when asked), tokens/s and an
// ETA, and the candidate's τ so far. After each response it writes two progress
// lines: one for people ("candidate: response 3/20: 128 tokens, tau 4.2, 35.1 tok/s,
// ETA 1m20s") and one for ferry (kEvalProgressJson + a JSON object, jobs/eval/run/eval_progress.h),
// which the eval stages store as the stage's progress. Torch-free; the eval's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace ferry::eval {

class ProgressMeter {
 public:
  using Clock = std::chrono::steady_clock;
  using LineFn = std::function<void(const std::string&)>;

  /// `prompts` per run, `runs` decoding runs in all; `out` may be empty (no lines).
  ProgressMeter(int64_t prompts, int runs, LineFn out, Clock::time_point now = Clock::now());

  /// A decoding run begins ("candidate", "reference", "baseline").
  void start_run(const std::string& label, Clock::time_point now = Clock::now());

  /// One response of the current run is done: its new tokens and its τ.
  void response_done(int64_t tokens, double tau, Clock::time_point now = Clock::now());

  /// The JSON line's object as it stands (for tests and the last line).
  std::string json_line() const;

 private:
  int64_t prompts_;
  int runs_;
  LineFn out_;
  Clock::time_point started_, run_started_;
  std::string label_;
  int run_index_ = 0;       // 1-based once a run started
  int64_t run_done_ = 0;    // responses of this run
  int64_t run_tokens_ = 0;  // new tokens of this run
  double run_tau_sum_ = 0;
  double candidate_tau_ = -1;  // the candidate's τ so far; < 0 before its first response
  double tokens_per_s_ = 0;
  double eta_s_ = -1;
};

}  // namespace ferry::eval
