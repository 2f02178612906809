#include "jobs/eval/run/progress_meter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/duration_text.h"
#include "jobs/eval/run/eval_progress.h"

namespace ferry::eval {
namespace {

double seconds(ProgressMeter::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

ProgressMeter::ProgressMeter(int64_t prompts, int runs, LineFn out, Clock::time_point now)
    : prompts_(prompts), runs_(runs), out_(std::move(out)), started_(now), run_started_(now) {}

void ProgressMeter::start_run(const std::string& label, Clock::time_point now) {
  label_ = label;
  ++run_index_;
  run_done_ = 0;
  run_tokens_ = 0;
  run_tau_sum_ = 0;
  run_started_ = now;
}

void ProgressMeter::response_done(int64_t tokens, double tau, Clock::time_point now) {
  ++run_done_;
  run_tokens_ += tokens;
  run_tau_sum_ += tau;
  if (label_ == "candidate") candidate_tau_ = run_tau_sum_ / static_cast<double>(run_done_);
  const double run_s = seconds(now - run_started_);
  tokens_per_s_ = run_s > 0 ? static_cast<double>(run_tokens_) / run_s : 0;
  // Responses done over all runs, against the time since decoding began: the runs
  // differ in speed (a baseline decodes a token a forward), so the ETA settles as
  // each run starts; it is a guide, not a promise.
  const int64_t done = static_cast<int64_t>(run_index_ - 1) * prompts_ + run_done_;
  const int64_t left = static_cast<int64_t>(runs_) * prompts_ - done;
  const double elapsed = seconds(now - started_);
  eta_s_ = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(left) : -1;
  if (!out_) return;
  char human[192];
  std::snprintf(human, sizeof human, "%s: response %lld/%lld: %lld tokens, tau %g, %.1f tok/s, ETA %s", label_.c_str(),
                static_cast<long long>(run_done_), static_cast<long long>(prompts_), static_cast<long long>(tokens),
                tau, tokens_per_s_, duration_text(std::llround(std::max(eta_s_, 0.0) * 1000)).c_str());
  out_(human);
  out_(kEvalProgressJson + json_line());
}

std::string ProgressMeter::json_line() const {
  nlohmann::json j = {{"phase", label_},          {"run", run_index_},         {"runs", runs_},
                      {"prompts_done", run_done_}, {"prompts_total", prompts_}, {"tokens", run_tokens_},
                      {"tokens_per_s", std::round(tokens_per_s_ * 10) / 10}};
  if (eta_s_ >= 0) j["eta_s"] = std::llround(eta_s_);
  if (candidate_tau_ >= 0) j["tau"] = candidate_tau_;
  return j.dump();
}

}  // namespace ferry::eval
