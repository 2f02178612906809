// How an eval's progress lines are marked in its stage's log, wherever the engine
// runs: the coordinator's EvalStage writes them there, the eval worker on a host
// prints them to its job's log, and RemoteEvalStage reads them back out of it: a
// line after kEvalProgressPrefix is a note for people, unless it starts with
// kEvalProgressJson, then it is the stage's progress as JSON (eval_progress_reader.h
// reads it; jobs/eval/run/progress_meter.h writes it). Header only, no dependencies
// (the worker includes it too).
#pragma once

namespace ferry {

inline constexpr const char* kEvalProgressPrefix = "[eval] ";
inline constexpr const char* kEvalProgressJson = "progress ";

}  // namespace ferry
