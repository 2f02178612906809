#include "jobs/stage_runner.h"

namespace ferry {

const char* outcome_state_name(StageOutcome::State state) {
  switch (state) {
    case StageOutcome::State::kSucceeded: return "succeeded";
    case StageOutcome::State::kFailed: return "failed";
    case StageOutcome::State::kTimedOut: return "timed_out";
    case StageOutcome::State::kCancelled: return "cancelled";
  }
  return "?";
}

}  // namespace ferry
