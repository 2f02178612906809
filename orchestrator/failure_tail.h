// Why a stage failed, where the user is looking: for each failed attempt of a
// failed stage, its error and the last lines of its log (the coordinator's copy,
// $FERRY_HOME/logs/RUN/STAGE/ATTEMPT.log), bounded and terminal-safe, with the
// `ferry logs` command that shows the rest. `ferry run`, `resume` and `status`
// print it under the status table; their --json carries it as "failures".
// Reads the store and the log files only. Any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "orchestrator/store.h"

namespace ferry {

/// At most this many of a log's last lines, and this many bytes of them.
inline constexpr int kFailureTailLines = 10;
inline constexpr size_t kFailureTailBytes = 2048;

struct FailedAttempt {
  std::string stage;
  int attempt = 0;
  StageState state = StageState::kFailed;
  std::string error;
  std::vector<std::string> tail;  // the log's last lines, controls escaped; empty when it wrote none
  bool cut = false;               // the log has more than `tail` shows
  std::string logs_command;       // "ferry logs RUN STAGE [--attempt N]"
};

/// The failed attempts of every stage that ended failed or timed out, in stage order.
Result<std::vector<FailedAttempt>> failed_attempts(Store& store, const RunRecord& run,
                                                   const std::vector<StageRecord>& stages, const std::string& logs_dir);

/// The last lines of the file at `path` (kFailureTailLines, kFailureTailBytes); `cut` says whether there was more.
std::vector<std::string> log_tail(const std::string& path, bool* cut);

/// The block under the status table: each attempt's error, its log's tail, the command for the rest.
std::string render_failures(const std::vector<FailedAttempt>& failures, bool color);
nlohmann::json failures_json(const std::vector<FailedAttempt>& failures);

/// A run as `ferry status` shows it, with its failures: the table and the block
/// under it, or run_to_json with "failures" (an empty list when none failed).
std::string render_status_with_failures(Store& store, const RunRecord& run, const std::vector<StageRecord>& stages,
                                        const std::string& logs_dir, bool color);
nlohmann::json run_json_with_failures(Store& store, const RunRecord& run, const std::vector<StageRecord>& stages,
                                      const std::string& logs_dir);

}  // namespace ferry
