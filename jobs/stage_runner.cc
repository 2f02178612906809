#include "jobs/stage_runner.h"

namespace ferry {

StageState stage_state_of(StageOutcome::State s) {
  switch (s) {
    case StageOutcome::State::kSucceeded: return StageState::kSucceeded;
    case StageOutcome::State::kFailed: return StageState::kFailed;
    case StageOutcome::State::kTimedOut: return StageState::kTimedOut;
    case StageOutcome::State::kCancelled: return StageState::kCancelled;
  }
  return StageState::kFailed;
}

bool transient_link_failure(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kCancelled;
}

const char* outcome_state_name(StageOutcome::State state) { return state_name(stage_state_of(state)); }

}  // namespace ferry
