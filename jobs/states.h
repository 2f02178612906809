// The vocabularies of a run's state machine: run, stage and attempt states.
//
// The scheduler and the views work with these enums; their names exist only as
// the strings stored in SQLite and shown in `ferry status` (and its --json),
// converted here, so runs recorded by older versions read back unchanged. A
// switch without a default then lists every place a new state must be handled.
#pragma once

#include <optional>
#include <string>

namespace ferry {

enum class RunState { kPending, kRunning, kSucceeded, kFailed, kCancelled };

/// A stage's state; an attempt's state is one of kRunning and the ended ones
/// (kSucceeded, kFailed, kTimedOut, kCancelled).
enum class StageState { kPending, kRunning, kRetrying, kSucceeded, kFailed, kTimedOut, kCancelled, kSkipped };

const char* state_name(RunState s);
const char* state_name(StageState s);
/// The stored name back; nullopt for a name no version wrote.
std::optional<RunState> parse_run_state(const std::string& name);
std::optional<StageState> parse_stage_state(const std::string& name);

/// A run that has ended (succeeded, failed or cancelled).
bool run_ended(RunState s);
/// A stage that may still change without a new run: pending, running or retrying.
bool stage_active(StageState s);

}  // namespace ferry
