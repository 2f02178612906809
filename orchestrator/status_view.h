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

/// Whether a coordinator drives `run` now: it holds the run's lock beside the
/// database at `db_path` (orchestrator/run_lock.h). Runs recorded before the lock
/// existed fall back to the recorded PID.
bool coordinator_alive(const RunRecord& run, const std::string& db_path);

nlohmann::json run_to_json(const RunRecord& run, const std::vector<StageRecord>& stages, const std::string& db_path);
/// The table: one row per stage: state, host, attempt, start, duration, exit code
/// or error, and what the stage measured (bytes moved, τ).
std::string render_status(const RunRecord& run, const std::vector<StageRecord>& stages, const std::string& db_path,
                          bool color);
std::string render_runs(const std::vector<RunRecord>& runs, const std::string& db_path, bool color);

/// A copy's progress (`bytes_done`, `bytes_total`, `rate`, `eta_s`, `route`) as the
/// line `ferry run` prints: "42% 10.0/24.0 MiB, 3.1 MiB/s, ETA 4s via relay", with a
/// bar in front on a terminal.
std::string copy_progress_line(const nlohmann::json& progress, bool tty);

}  // namespace ferry
