// How a run looks to a person (`ferry status`, the end of `ferry run`) and to a
// program (`--json`). Reads only what the Store returns. Any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/store.h"

namespace ferry {

/// `ms` since the epoch as local time, through strftime's `format`.
std::string local_time(int64_t ms, const char* format);

/// Whether the coordinator recorded for a running run is still alive here.
bool coordinator_alive(const RunRecord& run);

nlohmann::json run_to_json(const RunRecord& run, const std::vector<StageRecord>& stages);
/// The table: one row per stage: state, host, attempt, start, duration, exit code
/// or error, and what the stage measured (bytes moved, τ).
std::string render_status(const RunRecord& run, const std::vector<StageRecord>& stages, bool color);
std::string render_runs(const std::vector<RunRecord>& runs, bool color);

}  // namespace ferry
