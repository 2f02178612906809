// How an eval's progress lines are marked in its stage's log, wherever the engine
// runs: the coordinator's EvalStage writes them there, the eval worker on a host
// prints them to its job's log, and RemoteEvalStage reads them back out of it as
// progress notes. Header only, no dependencies (the worker includes it too).
#pragma once

namespace ferry {

inline constexpr const char* kEvalProgressPrefix = "[eval] ";

}  // namespace ferry
