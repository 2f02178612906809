#include "jobs/states.h"

namespace ferry {

const char* state_name(RunState s) {
  switch (s) {
    case RunState::kPending: return "pending";
    case RunState::kRunning: return "running";
    case RunState::kSucceeded: return "succeeded";
    case RunState::kFailed: return "failed";
    case RunState::kCancelled: return "cancelled";
  }
  return "?";
}

const char* state_name(StageState s) {
  switch (s) {
    case StageState::kPending: return "pending";
    case StageState::kRunning: return "running";
    case StageState::kRetrying: return "retrying";
    case StageState::kSucceeded: return "succeeded";
    case StageState::kFailed: return "failed";
    case StageState::kTimedOut: return "timed_out";
    case StageState::kCancelled: return "cancelled";
    case StageState::kSkipped: return "skipped";
  }
  return "?";
}

std::optional<RunState> parse_run_state(const std::string& name) {
  for (RunState s :
       {RunState::kPending, RunState::kRunning, RunState::kSucceeded, RunState::kFailed, RunState::kCancelled}) {
    if (name == state_name(s)) return s;
  }
  return std::nullopt;
}

std::optional<StageState> parse_stage_state(const std::string& name) {
  for (StageState s : {StageState::kPending, StageState::kRunning, StageState::kRetrying, StageState::kSucceeded,
                       StageState::kFailed, StageState::kTimedOut, StageState::kCancelled, StageState::kSkipped}) {
    if (name == state_name(s)) return s;
  }
  return std::nullopt;
}

bool run_ended(RunState s) { return s == RunState::kSucceeded || s == RunState::kFailed || s == RunState::kCancelled; }

bool stage_active(StageState s) {
  return s == StageState::kPending || s == StageState::kRunning || s == StageState::kRetrying;
}

StageState stage_state_of(StageOutcome::State s) {
  switch (s) {
    case StageOutcome::State::kSucceeded: return StageState::kSucceeded;
    case StageOutcome::State::kFailed: return StageState::kFailed;
    case StageOutcome::State::kTimedOut: return StageState::kTimedOut;
    case StageOutcome::State::kCancelled: return StageState::kCancelled;
  }
  return StageState::kFailed;
}

}  // namespace ferry
