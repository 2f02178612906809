#include "jobs/stage_runner.h"

#include "jobs/states.h"

namespace ferry {

const char* outcome_state_name(StageOutcome::State state) { return state_name(stage_state_of(state)); }

}  // namespace ferry
