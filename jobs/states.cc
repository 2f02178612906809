#include "jobs/states.h"

#include "base/enum_names.h"

namespace ferry {

namespace {

constexpr EnumName<RunState> kRunStateNames[] = {{RunState::kPending, "pending"},
                                                 {RunState::kRunning, "running"},
                                                 {RunState::kSucceeded, "succeeded"},
                                                 {RunState::kFailed, "failed"},
                                                 {RunState::kCancelled, "cancelled"}};

constexpr EnumName<StageState> kStageStateNames[] = {
    {StageState::kPending, "pending"},     {StageState::kRunning, "running"}, {StageState::kRetrying, "retrying"},
    {StageState::kSucceeded, "succeeded"}, {StageState::kFailed, "failed"},   {StageState::kTimedOut, "timed_out"},
    {StageState::kCancelled, "cancelled"}, {StageState::kSkipped, "skipped"}};

}  // namespace

const char* state_name(RunState s) { return enum_name(kRunStateNames, s); }

const char* state_name(StageState s) { return enum_name(kStageStateNames, s); }

std::optional<RunState> parse_run_state(const std::string& name) { return enum_from_name(kRunStateNames, name); }

std::optional<StageState> parse_stage_state(const std::string& name) { return enum_from_name(kStageStateNames, name); }

bool run_ended(RunState s) { return s == RunState::kSucceeded || s == RunState::kFailed || s == RunState::kCancelled; }

bool stage_active(StageState s) {
  return s == StageState::kPending || s == StageState::kRunning || s == StageState::kRetrying;
}

}  // namespace ferry
