// The fault suite's table of trials: each trial adds its row as it ends, and the
// whole table is printed once every trial has run (also when one failed early).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ferry::e2e {

struct Outcome {
  std::string trial;
  bool succeeded = false;              // the run (after its resumes) ended as the trial expects
  std::optional<bool> identical;       // the copied files equal their source; unset when no copy matters
  std::optional<bool> launched_once;   // no job ran twice (or two attempts at once)
  double tau = -1;                     // the eval's τ; < 0 when the trial has no eval
  int resumes = 0;
  std::string figure;                  // the trial's measured figure (seconds, counts)
  std::string note;                    // what went wrong, when something did
};

/// The rows so far, in the order the trials ended.
std::vector<Outcome>& table();

/// A figure's number with `digits` decimals.
std::string fixed(double v, int digits = 1);
/// Seconds since `t0`, for a figure.
double seconds_since(std::chrono::steady_clock::time_point t0);

}  // namespace ferry::e2e
