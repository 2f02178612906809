// Store: the state of every run in SQLite (SQLiteCpp), the one file shared by
// `ferry run`, `status`, `logs`, `resume` and `cancel`, live or after a crash.
//
// WAL mode, a busy timeout for concurrent readers and writers, writes retried
// while they fail for a reason that may pass (a lock held elsewhere, a full disk),
// a schema version in PRAGMA user_version with forward migrations. Each state change writes its
// event row in the same transaction, before the caller acts on it, so a crash
// never loses something that was shown. The only file that includes SQLiteCpp;
// its exceptions become Status values here.
//
// Thread contract: one Store object per thread (the coordinator uses it on its io
// thread only); any number of processes may open the same file.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "jobs/states.h"

namespace SQLite {
class Database;
}

namespace ferry {

inline constexpr int kSchemaVersion = 2;

struct RunRecord {
  std::string id;   // "<workflow name>-<n>": short, unique in this database only
  std::string uid;  // random, unique across databases; '' for runs recorded before schema 2
  std::string name;
  std::string workflow_path;
  std::string workflow_source;
  nlohmann::json params = nlohmann::json::object();
  RunState state = RunState::kPending;
  int coordinator_pid = 0;
  int64_t created_ms = 0;
  int64_t ended_ms = 0;
  std::string error;
  bool cancel_requested = false;

  /// The key of a stage's job on its host (<workdir>/.ferry/jobs/<key>): "<id>.<uid>.<stage>",
  /// so a second coordinator or a fresh database that counts the same id never meets
  /// this run's journal. Runs without a uid keep the key they were started with.
  std::string job_key(const std::string& stage) const;
};

struct StageRecord {
  std::string run_id;
  std::string name;
  int position = 0;
  std::string kind;
  std::string host;
  StageState state = StageState::kPending;
  int attempt = 0;
  std::string token;
  std::string inputs_hash;
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
  std::optional<int> exit_code;
  std::string error;
  int64_t disconnected_since_ms = 0;
  nlohmann::json progress;
  std::map<std::string, std::string> outputs;
  std::map<std::string, double> metrics;
};

struct EventRecord {
  int64_t seq = 0;
  std::string stage;
  int64_t ts_ms = 0;
  std::string type;
  nlohmann::json detail;
};

struct AttemptRecord {
  int attempt = 0;
  std::string token;
  StageState state = StageState::kRunning;  // running, or how it ended
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
  std::optional<int> exit_code;
  std::string error;
};

struct StageSeed {  // what a new run knows of each stage
  std::string name, kind, host;
};

/// A run's uid: 8 characters of [0-9a-z] (41 bits), so two coordinators that count
/// the same run id ("train-3") collide on a host only by a 1-in-10^12 chance.
std::string new_run_uid();

class Store {
 public:
  ~Store();
  static Result<std::unique_ptr<Store>> open(const std::string& path);
  /// For views (status, runs, logs): never writes, never checkpoints on close,
  /// so it stays fast beside a live run. Fails if the file does not exist.
  static Result<std::unique_ptr<Store>> open_read_only(const std::string& path);

  /// `uid` as new_run_uid() makes it; a fresh one when empty.
  Result<RunRecord> create_run(const std::string& name, const std::string& workflow_path,
                               const std::string& workflow_source, const nlohmann::json& params,
                               const std::vector<StageSeed>& stages, std::string uid = "");
  /// By id ("hello-3"), or "last" for the newest run.
  Result<RunRecord> find_run(const std::string& id);
  Result<std::vector<RunRecord>> list_runs(int limit);
  Result<std::vector<StageRecord>> stages(const std::string& run_id);
  Result<std::vector<EventRecord>> events(const std::string& run_id, const std::string& stage = "");
  Result<std::vector<AttemptRecord>> attempts(const std::string& run_id, const std::string& stage);

  /// A resume with an edited workflow: the run's file, text and params become these;
  /// each seed's stage is added where the run has none, or given its kind and host;
  /// `plan` goes into the event that records it.
  Status update_workflow(const std::string& run_id, const std::string& workflow_path,
                         const std::string& workflow_source, const nlohmann::json& params,
                         const std::vector<StageSeed>& stages, const nlohmann::json& plan);
  Status set_run_state(const std::string& run_id, RunState state, int coordinator_pid,
                       const std::string& error = "");
  Status request_cancel(const std::string& run_id);
  /// Clears a cancel request nobody acted on (a `resume` says: carry on).
  Status withdraw_cancel(const std::string& run_id);

  /// stage → running with a new attempt; writes the attempt row and its event.
  Status begin_attempt(const std::string& run_id, const std::string& stage, int attempt, const std::string& token,
                       const std::string& inputs_hash);
  /// Records an attempt's end exactly once: false when it was already recorded.
  Result<bool> finish_attempt(const std::string& run_id, const std::string& stage, int attempt,
                              StageState state, std::optional<int> exit_code, const std::string& error);
  /// Sets a stage's state without an attempt (pending, skipped, cancelled...).
  Status set_stage_state(const std::string& run_id, const std::string& stage, StageState state,
                         const std::string& error);
  Status set_outputs(const std::string& run_id, const std::string& stage, const std::map<std::string, std::string>& kv);
  Status set_metrics(const std::string& run_id, const std::string& stage, const std::map<std::string, double>& kv);
  Status set_disconnected(const std::string& run_id, const std::string& stage, int64_t since_ms);
  Status set_progress(const std::string& run_id, const std::string& stage, const nlohmann::json& progress);
  Status add_event(const std::string& run_id, const std::string& stage, const std::string& type,
                   const nlohmann::json& detail);

  /// "$FERRY_HOME/ferry.db" (FERRY_HOME defaults to ~/.local/share/ferry); "" when
  /// neither FERRY_HOME nor HOME is set (no shared fallback such as /tmp).
  static std::string default_path();
  const std::string& path() const { return path_; }

 private:
  explicit Store(std::string path);
  Status migrate();
  Status set_cancel_requested(const std::string& run_id, bool requested);
  void add_event_locked(const std::string& run_id, const std::string& stage, const std::string& type,
                          const nlohmann::json& detail);

  std::string path_;
  std::unique_ptr<SQLite::Database> db_;
  int64_t patience_ms_ = 0;  // how long a write retries a failure that may pass
};

}  // namespace ferry
