#include "orchestrator/store.h"

#include <sys/stat.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <thread>

#include "base/clock.h"
#include "base/ferry_home.h"
#include "base/file_util.h"

namespace ferry {
namespace {

// Forward migrations: entry i moves the schema from version i to i+1.
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE runs(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT UNIQUE,
  name TEXT NOT NULL,
  workflow_path TEXT NOT NULL,
  workflow_source TEXT NOT NULL,
  params TEXT NOT NULL,
  state TEXT NOT NULL,
  coordinator_pid INTEGER NOT NULL DEFAULT 0,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  created_ms INTEGER NOT NULL,
  ended_ms INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '');
CREATE TABLE stages(
  run_id TEXT NOT NULL,
  name TEXT NOT NULL,
  position INTEGER NOT NULL,
  kind TEXT NOT NULL,
  host TEXT NOT NULL,
  state TEXT NOT NULL,
  attempt INTEGER NOT NULL DEFAULT 0,
  token TEXT NOT NULL DEFAULT '',
  inputs_hash TEXT NOT NULL DEFAULT '',
  started_ms INTEGER NOT NULL DEFAULT 0,
  ended_ms INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER,
  error TEXT NOT NULL DEFAULT '',
  disconnected_since_ms INTEGER NOT NULL DEFAULT 0,
  progress TEXT NOT NULL DEFAULT 'null',
  PRIMARY KEY(run_id, name));
CREATE TABLE attempts(
  run_id TEXT NOT NULL,
  stage TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  token TEXT NOT NULL,
  state TEXT NOT NULL,
  inputs_hash TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER,
  error TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(run_id, stage, attempt));
CREATE TABLE events(
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT NOT NULL,
  stage TEXT NOT NULL,
  ts_ms INTEGER NOT NULL,
  type TEXT NOT NULL,
  detail TEXT NOT NULL);
CREATE INDEX events_by_run ON events(run_id, stage, seq);
CREATE TABLE outputs(
  run_id TEXT NOT NULL, stage TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY(run_id, stage, key));
CREATE TABLE metrics(
  run_id TEXT NOT NULL, stage TEXT NOT NULL, key TEXT NOT NULL, value REAL NOT NULL,
  PRIMARY KEY(run_id, stage, key));
)sql",
    // v2: a run's identity across coordinators. `id` ("name-N") is counted in this
    // database only; `uid` is random, so two databases never share a job key on a
    // host. Runs recorded before keep uid '' and their old job keys.
    R"sql(
ALTER TABLE runs ADD COLUMN uid TEXT NOT NULL DEFAULT '';
)sql",
};
constexpr int kMigrationCount = sizeof(kMigrations) / sizeof(kMigrations[0]);
static_assert(kMigrationCount == kSchemaVersion, "one migration per schema version");

Status db_error(const std::string& what, const std::exception& e) {
  return internal_error("state store: " + what + ": " + e.what());
}

// How long a write may keep failing for a reason that can pass before the store
// gives up on it: the database locked by another process (a `sqlite3` shell, a
// backup), a disk that was full or failed once. FERRY_STORE_PATIENCE_S overrides it.
constexpr int64_t kDefaultPatienceMs = 120'000;
constexpr int64_t kMaxBusyWaitMs = 10'000;  // one try's wait for the lock
constexpr int64_t kFirstPauseMs = 50;
constexpr int64_t kMaxPauseMs = 2'000;

int64_t patience_from_env() {
  const char* v = std::getenv("FERRY_STORE_PATIENCE_S");
  if (!v || !*v) return kDefaultPatienceMs;
  char* end = nullptr;
  double s = std::strtod(v, &end);
  if (end == v || *end || !(s >= 0)) return kDefaultPatienceMs;
  return static_cast<int64_t>(s * 1000);
}

bool may_pass(const SQLite::Exception& e) {
  switch (e.getErrorCode() & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_PROTOCOL:
      return true;
    default:
      return false;
  }
}

// Runs one write (a whole transaction) and runs it again after a pause while it
// fails for a reason that may pass, for up to `patience_ms` in all. What fails
// for good, or for longer, comes back as a Status: the coordinator then stops
// without touching its jobs (they run on; `ferry resume` re-attaches).
template <class Fn>
auto write_retrying(int64_t patience_ms, const char* what, Fn fn) -> decltype(fn()) {
  int64_t started = now_ms();
  int64_t deadline = started + patience_ms;
  int64_t pause = kFirstPauseMs;
  int tries = 0;
  for (;;) {
    ++tries;
    try {
      return fn();
    } catch (const SQLite::Exception& e) {
      if (!may_pass(e) || now_ms() + pause > deadline) {
        std::string how = tries > 1 ? " (still failing after " + std::to_string(tries) + " tries in " +
                                          std::to_string((now_ms() - started) / 1000) + " s)"
                                    : "";
        return internal_error(std::string("state store: ") + what + ": " + e.what() + how);
      }
    } catch (const std::exception& e) {
      return db_error(what, e);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(pause));
    pause = std::min(pause * 2, kMaxPauseMs);
  }
}

nlohmann::json parse_json(const std::string& s) {
  auto j = nlohmann::json::parse(s, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

// A state column back to its enum; a name no version wrote is a damaged file.
RunState run_state_column(const std::string& name) {
  auto s = parse_run_state(name);
  if (!s) throw std::runtime_error("unknown run state '" + name + "'");
  return *s;
}

StageState stage_state_column(const std::string& name) {
  auto s = parse_stage_state(name);
  if (!s) throw std::runtime_error("unknown stage state '" + name + "'");
  return *s;
}

// A stage's row as a run first knows it: pending, no attempt.
void insert_stage(SQLite::Database& db, const std::string& run_id, int position, const StageSeed& s) {
  SQLite::Statement st(db, "INSERT INTO stages(run_id, name, position, kind, host, state) VALUES(?,?,?,?,?, 'pending')");
  st.bind(1, run_id);
  st.bind(2, s.name);
  st.bind(3, position);
  st.bind(4, s.kind);
  st.bind(5, s.host);
  st.exec();
}

std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

RunRecord read_run(SQLite::Statement& q) {
  RunRecord r;
  r.id = q.getColumn("id").getString();
  r.name = q.getColumn("name").getString();
  r.workflow_path = q.getColumn("workflow_path").getString();
  r.workflow_source = q.getColumn("workflow_source").getString();
  r.params = parse_json(q.getColumn("params").getString());
  r.state = run_state_column(q.getColumn("state").getString());
  r.coordinator_pid = q.getColumn("coordinator_pid").getInt();
  r.cancel_requested = q.getColumn("cancel_requested").getInt() != 0;
  r.created_ms = q.getColumn("created_ms").getInt64();
  r.ended_ms = q.getColumn("ended_ms").getInt64();
  r.error = q.getColumn("error").getString();
  r.uid = q.getColumn("uid").getString();
  return r;
}

}  // namespace

Store::Store(std::string path) : path_(std::move(path)) {}
Store::~Store() = default;

std::string Store::default_path() {
  std::string home = ferry_home_dir();
  return home.empty() ? "" : home + "/ferry.db";  // "": the caller asks for FERRY_HOME or HOME
}

std::string RunRecord::job_key(const std::string& stage) const {
  return (uid.empty() ? id : id + "." + uid) + "." + stage;
}

Result<std::unique_ptr<Store>> Store::open(const std::string& path) {
  FERRY_RETURN_IF_ERROR(make_dirs(dirname_of(path)));
  // Params (often tokens), workflow sources, logs and local hosts' job specs live
  // in ferry's home: the user's alone. (A --db elsewhere keeps its folder's mode.)
  if (path == default_path()) (void)::chmod(dirname_of(path).c_str(), 0700);
  std::unique_ptr<Store> store(new Store(path));
  try {
    store->db_ = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    (void)::chmod(path.c_str(), 0600);  // SQLite gives its -wal and -shm files the same mode
    store->patience_ms_ = patience_from_env();
    store->db_->setBusyTimeout(static_cast<int>(std::min(kMaxBusyWaitMs, std::max<int64_t>(store->patience_ms_, 1))));
    store->db_->exec("PRAGMA journal_mode=WAL");
    // FULL: an attempt recorded before its job is launched must survive a power
    // loss, or resume reuses its number with a new token (review F24). Writes are few.
    store->db_->exec("PRAGMA synchronous=FULL");
    store->db_->exec("PRAGMA foreign_keys=ON");
  } catch (const std::exception& e) {
    return db_error("open " + path, e);
  }
  FERRY_RETURN_IF_ERROR(store->migrate());
  return store;
}

Result<std::unique_ptr<Store>> Store::open_read_only(const std::string& path) {
  std::unique_ptr<Store> store(new Store(path));
  try {
    store->db_ = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READONLY);
    store->db_->setBusyTimeout(10000);
    int version = store->db_->execAndGet("PRAGMA user_version").getInt();
    if (version != kSchemaVersion) {
      return failed_precondition("state store " + path + " has schema version " + std::to_string(version) +
                                 "; this ferry reads version " + std::to_string(kSchemaVersion) +
                                 " (any writing command migrates it)");
    }
  } catch (const std::exception& e) {
    if (!path_exists(path)) return not_found("no state database at " + path + " (no run yet?)");
    return db_error("open " + path, e);
  }
  return store;
}

Status Store::migrate() {
  try {
    // The common case, a current schema, needs no write lock.
    if (db_->execAndGet("PRAGMA user_version").getInt() == kSchemaVersion) return Status();
    // IMMEDIATE: concurrent first opens wait for the write lock instead of failing busy.
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    int version = db_->execAndGet("PRAGMA user_version").getInt();
    if (version > kSchemaVersion) {
      return failed_precondition("state store " + path_ + " has schema version " + std::to_string(version) +
                                 ", newer than this ferry understands (" + std::to_string(kSchemaVersion) + ")");
    }
    for (int v = version; v < kSchemaVersion; ++v) db_->exec(kMigrations[v]);
    if (version != kSchemaVersion) db_->exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
    tx.commit();
  } catch (const std::exception& e) {
    return db_error("migrate " + path_, e);
  }
  return Status();
}

void Store::add_event_locked(const std::string& run_id, const std::string& stage, const std::string& type,
                               const nlohmann::json& detail) {
  SQLite::Statement q(*db_, "INSERT INTO events(run_id, stage, ts_ms, type, detail) VALUES(?,?,?,?,?)");
  q.bind(1, run_id);
  q.bind(2, stage);
  q.bind(3, static_cast<int64_t>(now_ms()));
  q.bind(4, type);
  q.bind(5, dump(detail));
  q.exec();
}

Status Store::add_event(const std::string& run_id, const std::string& stage, const std::string& type,
                        const nlohmann::json& detail) {
  return write_retrying(patience_ms_, "add event", [&]() -> Status {
    add_event_locked(run_id, stage, type, detail);
    return Status();
  });
}

std::string new_run_uid() {
  static const char kAlphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::random_device rd;
  std::string uid;
  for (int i = 0; i < 8; ++i) uid += kAlphabet[rd() % 36];
  return uid;
}

Result<RunRecord> Store::create_run(const std::string& name, const std::string& workflow_path,
                                    const std::string& workflow_source, const nlohmann::json& params,
                                    const std::vector<StageSeed>& stages, std::string uid) {
  if (uid.empty()) uid = new_run_uid();
  return write_retrying(patience_ms_, "create run", [&]() -> Result<RunRecord> {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement ins(*db_,
                          "INSERT INTO runs(name, workflow_path, workflow_source, params, state, created_ms) "
                          "VALUES(?,?,?,?, 'pending', ?)");
    ins.bind(1, name);
    ins.bind(2, workflow_path);
    ins.bind(3, workflow_source);
    ins.bind(4, dump(params));
    ins.bind(5, static_cast<int64_t>(now_ms()));
    ins.exec();
    int64_t seq = db_->getLastInsertRowid();
    std::string id = name + "-" + std::to_string(seq);
    SQLite::Statement upd(*db_, "UPDATE runs SET id=?, uid=? WHERE seq=?");
    upd.bind(1, id);
    upd.bind(2, uid);
    upd.bind(3, seq);
    upd.exec();
    int pos = 0;
    for (const auto& s : stages) insert_stage(*db_, id, pos++, s);
    add_event_locked(id, "", "run.created", {{"workflow", workflow_path}, {"params", params}});
    tx.commit();
    RunRecord r;
    r.id = id;
    r.uid = uid;
    r.name = name;
    r.workflow_path = workflow_path;
    r.workflow_source = workflow_source;
    r.params = params;
    r.state = RunState::kPending;
    return r;
  });
}

Result<RunRecord> Store::find_run(const std::string& id) {
  try {
    SQLite::Statement q(*db_, id == "last" ? "SELECT * FROM runs ORDER BY seq DESC LIMIT 1"
                                           : "SELECT * FROM runs WHERE id=?");
    if (id != "last") q.bind(1, id);
    if (!q.executeStep()) return not_found("no run '" + id + "' in " + path_);
    return read_run(q);
  } catch (const std::exception& e) {
    return db_error("find run", e);
  }
}

Result<std::vector<RunRecord>> Store::list_runs(int limit) {
  try {
    SQLite::Statement q(*db_, "SELECT * FROM runs ORDER BY seq DESC LIMIT ?");
    q.bind(1, limit);
    std::vector<RunRecord> out;
    while (q.executeStep()) out.push_back(read_run(q));
    return out;
  } catch (const std::exception& e) {
    return db_error("list runs", e);
  }
}

Result<std::vector<StageRecord>> Store::stages(const std::string& run_id) {
  try {
    std::vector<StageRecord> out;
    std::map<std::string, size_t> index;
    SQLite::Statement q(*db_, "SELECT * FROM stages WHERE run_id=? ORDER BY position");
    q.bind(1, run_id);
    while (q.executeStep()) {
      StageRecord s;
      s.run_id = run_id;
      s.name = q.getColumn("name").getString();
      s.position = q.getColumn("position").getInt();
      s.kind = q.getColumn("kind").getString();
      s.host = q.getColumn("host").getString();
      s.state = stage_state_column(q.getColumn("state").getString());
      s.attempt = q.getColumn("attempt").getInt();
      s.token = q.getColumn("token").getString();
      s.inputs_hash = q.getColumn("inputs_hash").getString();
      s.started_ms = q.getColumn("started_ms").getInt64();
      s.ended_ms = q.getColumn("ended_ms").getInt64();
      if (!q.getColumn("exit_code").isNull()) s.exit_code = q.getColumn("exit_code").getInt();
      s.error = q.getColumn("error").getString();
      s.disconnected_since_ms = q.getColumn("disconnected_since_ms").getInt64();
      s.progress = parse_json(q.getColumn("progress").getString());
      index[s.name] = out.size();
      out.push_back(std::move(s));
    }
    SQLite::Statement o(*db_, "SELECT stage, key, value FROM outputs WHERE run_id=?");
    o.bind(1, run_id);
    while (o.executeStep()) {
      auto it = index.find(o.getColumn(0).getString());
      if (it != index.end()) out[it->second].outputs[o.getColumn(1).getString()] = o.getColumn(2).getString();
    }
    SQLite::Statement m(*db_, "SELECT stage, key, value FROM metrics WHERE run_id=?");
    m.bind(1, run_id);
    while (m.executeStep()) {
      auto it = index.find(m.getColumn(0).getString());
      if (it != index.end()) out[it->second].metrics[m.getColumn(1).getString()] = m.getColumn(2).getDouble();
    }
    return out;
  } catch (const std::exception& e) {
    return db_error("read stages", e);
  }
}

Result<std::vector<EventRecord>> Store::events(const std::string& run_id, const std::string& stage) {
  try {
    SQLite::Statement q(
        *db_, stage.empty()
                  ? "SELECT seq, stage, ts_ms, type, detail FROM events WHERE run_id=? ORDER BY seq"
                  : "SELECT seq, stage, ts_ms, type, detail FROM events WHERE run_id=? AND stage=? ORDER BY seq");
    q.bind(1, run_id);
    if (!stage.empty()) q.bind(2, stage);
    std::vector<EventRecord> out;
    while (q.executeStep()) {
      out.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getString(), q.getColumn(2).getInt64(),
                     q.getColumn(3).getString(), parse_json(q.getColumn(4).getString())});
    }
    return out;
  } catch (const std::exception& e) {
    return db_error("read events", e);
  }
}

Result<std::vector<AttemptRecord>> Store::attempts(const std::string& run_id, const std::string& stage) {
  try {
    SQLite::Statement q(*db_, "SELECT attempt, token, state, started_ms, ended_ms, exit_code, error FROM attempts "
                              "WHERE run_id=? AND stage=? ORDER BY attempt");
    q.bind(1, run_id);
    q.bind(2, stage);
    std::vector<AttemptRecord> out;
    while (q.executeStep()) {
      AttemptRecord a;
      a.attempt = q.getColumn(0).getInt();
      a.token = q.getColumn(1).getString();
      a.state = stage_state_column(q.getColumn(2).getString());
      a.started_ms = q.getColumn(3).getInt64();
      a.ended_ms = q.getColumn(4).getInt64();
      if (!q.getColumn(5).isNull()) a.exit_code = q.getColumn(5).getInt();
      a.error = q.getColumn(6).getString();
      out.push_back(a);
    }
    return out;
  } catch (const std::exception& e) {
    return db_error("read attempts", e);
  }
}

Status Store::update_workflow(const std::string& run_id, const std::string& workflow_path,
                              const std::string& workflow_source, const nlohmann::json& params,
                              const std::vector<StageSeed>& stages, const nlohmann::json& plan) {
  return write_retrying(patience_ms_, "update the run's workflow", [&]() -> Status {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement q(*db_, "UPDATE runs SET workflow_path=?, workflow_source=?, params=? WHERE id=?");
    q.bind(1, workflow_path);
    q.bind(2, workflow_source);
    q.bind(3, dump(params));
    q.bind(4, run_id);
    q.exec();
    SQLite::Statement last(*db_, "SELECT COALESCE(MAX(position), -1) FROM stages WHERE run_id=?");
    last.bind(1, run_id);
    int pos = last.executeStep() ? last.getColumn(0).getInt() + 1 : 0;
    SQLite::Statement upd(*db_, "UPDATE stages SET kind=?, host=? WHERE run_id=? AND name=?");
    for (const auto& s : stages) {
      upd.bind(1, s.kind);
      upd.bind(2, s.host);
      upd.bind(3, run_id);
      upd.bind(4, s.name);
      int changed = upd.exec();
      upd.reset();
      if (changed == 0) insert_stage(*db_, run_id, pos++, s);
    }
    add_event_locked(run_id, "", "run.workflow_updated", {{"workflow", workflow_path}, {"plan", plan}});
    tx.commit();
    return Status();
  });
}

Status Store::set_run_state(const std::string& run_id, RunState run_state, int coordinator_pid,
                            const std::string& error) {
  return write_retrying(patience_ms_, "set run state", [&]() -> Status {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    const std::string state = state_name(run_state);
    bool ended = run_ended(run_state);
    SQLite::Statement q(*db_, "UPDATE runs SET state=?, coordinator_pid=?, error=?, ended_ms=? WHERE id=?");
    q.bind(1, state);
    q.bind(2, coordinator_pid);
    q.bind(3, error);
    q.bind(4, static_cast<int64_t>(ended ? now_ms() : 0));
    q.bind(5, run_id);
    q.exec();
    add_event_locked(run_id, "", "run." + state, {{"pid", coordinator_pid}, {"error", error}});
    tx.commit();
    return Status();
  });
}

Status Store::set_cancel_requested(const std::string& run_id, bool requested) {
  return write_retrying(patience_ms_, requested ? "request cancel" : "withdraw cancel", [&]() -> Status {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement q(*db_, "UPDATE runs SET cancel_requested=? WHERE id=?");
    q.bind(1, requested ? 1 : 0);
    q.bind(2, run_id);
    q.exec();
    add_event_locked(run_id, "", requested ? "run.cancel_requested" : "run.cancel_withdrawn",
                     nlohmann::json::object());
    tx.commit();
    return Status();
  });
}

Status Store::request_cancel(const std::string& run_id) { return set_cancel_requested(run_id, true); }

Status Store::withdraw_cancel(const std::string& run_id) { return set_cancel_requested(run_id, false); }

Status Store::begin_attempt(const std::string& run_id, const std::string& stage, int attempt, const std::string& token,
                            const std::string& inputs_hash) {
  return write_retrying(patience_ms_, "begin attempt", [&]() -> Status {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    int64_t now = now_ms();
    SQLite::Statement a(*db_, "INSERT INTO attempts(run_id, stage, attempt, token, state, inputs_hash, started_ms) "
                              "VALUES(?,?,?,?, 'running', ?, ?)");
    a.bind(1, run_id);
    a.bind(2, stage);
    a.bind(3, attempt);
    a.bind(4, token);
    a.bind(5, inputs_hash);
    a.bind(6, static_cast<int64_t>(now));
    a.exec();
    SQLite::Statement s(*db_, "UPDATE stages SET state='running', attempt=?, token=?, inputs_hash=?, started_ms=?, "
                              "ended_ms=0, exit_code=NULL, error='', disconnected_since_ms=0, progress='null' "
                              "WHERE run_id=? AND name=?");
    s.bind(1, attempt);
    s.bind(2, token);
    s.bind(3, inputs_hash);
    s.bind(4, static_cast<int64_t>(now));
    s.bind(5, run_id);
    s.bind(6, stage);
    s.exec();
    add_event_locked(run_id, stage, "attempt.started", {{"attempt", attempt}, {"token", token}});
    tx.commit();
    return Status();
  });
}

Result<bool> Store::finish_attempt(const std::string& run_id, const std::string& stage, int attempt,
                                   StageState ended_state, std::optional<int> exit_code, const std::string& error) {
  return write_retrying(patience_ms_, "finish attempt", [&]() -> Result<bool> {
    const std::string state = state_name(ended_state);
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    int64_t now = now_ms();
    // The attempt and its stage end alike: parameters 1-6 of both updates.
    auto bind_ending = [&](SQLite::Statement& q) {
      q.bind(1, state);
      q.bind(2, static_cast<int64_t>(now));
      if (exit_code) q.bind(3, *exit_code);
      else q.bind(3);
      q.bind(4, error);
      q.bind(5, run_id);
      q.bind(6, stage);
    };
    SQLite::Statement a(*db_, "UPDATE attempts SET state=?, ended_ms=?, exit_code=?, error=? "
                              "WHERE run_id=? AND stage=? AND attempt=? AND state='running'");
    bind_ending(a);
    a.bind(7, attempt);
    if (a.exec() == 0) return false;  // already recorded: never twice
    SQLite::Statement s(*db_, "UPDATE stages SET state=?, ended_ms=?, exit_code=?, error=?, disconnected_since_ms=0 "
                              "WHERE run_id=? AND name=?");
    bind_ending(s);
    s.exec();
    nlohmann::json detail = {{"attempt", attempt}, {"state", state}, {"error", error}};
    if (exit_code) detail["exit_code"] = *exit_code;
    add_event_locked(run_id, stage, "attempt.finished", detail);
    tx.commit();
    return true;
  });
}

Status Store::set_stage_state(const std::string& run_id, const std::string& stage, StageState stage_state,
                              const std::string& error) {
  return write_retrying(patience_ms_, "set stage state", [&]() -> Status {
    const std::string state = state_name(stage_state);
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement s(*db_, "UPDATE stages SET state=?, error=? WHERE run_id=? AND name=?");
    s.bind(1, state);
    s.bind(2, error);
    s.bind(3, run_id);
    s.bind(4, stage);
    s.exec();
    add_event_locked(run_id, stage, "stage." + state, {{"error", error}});
    tx.commit();
    return Status();
  });
}

namespace {

// Writes a stage's key/value rows into `table` (outputs or metrics), replacing keys it had.
template <typename Value>
void put_stage_values(SQLite::Database& db, const char* table, const std::string& run_id, const std::string& stage,
                      const std::map<std::string, Value>& kv) {
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement q(db,
                      std::string("INSERT OR REPLACE INTO ") + table + "(run_id, stage, key, value) VALUES(?,?,?,?)");
  for (const auto& [k, v] : kv) {
    q.bind(1, run_id);
    q.bind(2, stage);
    q.bind(3, k);
    q.bind(4, v);
    q.exec();
    q.reset();
  }
  tx.commit();
}

}  // namespace

Status Store::set_outputs(const std::string& run_id, const std::string& stage,
                          const std::map<std::string, std::string>& kv) {
  return write_retrying(patience_ms_, "set outputs", [&]() -> Status {
    put_stage_values(*db_, "outputs", run_id, stage, kv);
    return Status();
  });
}

Status Store::set_metrics(const std::string& run_id, const std::string& stage,
                          const std::map<std::string, double>& kv) {
  return write_retrying(patience_ms_, "set metrics", [&]() -> Status {
    put_stage_values(*db_, "metrics", run_id, stage, kv);
    return Status();
  });
}

Status Store::set_disconnected(const std::string& run_id, const std::string& stage, int64_t since_ms) {
  return write_retrying(patience_ms_, "set disconnected", [&]() -> Status {
    SQLite::Statement q(*db_, "UPDATE stages SET disconnected_since_ms=? WHERE run_id=? AND name=?");
    q.bind(1, static_cast<int64_t>(since_ms));
    q.bind(2, run_id);
    q.bind(3, stage);
    q.exec();
    return Status();
  });
}

Status Store::set_progress(const std::string& run_id, const std::string& stage, const nlohmann::json& progress) {
  return write_retrying(patience_ms_, "set progress", [&]() -> Status {
    SQLite::Statement q(*db_, "UPDATE stages SET progress=? WHERE run_id=? AND name=?");
    q.bind(1, dump(progress));
    q.bind(2, run_id);
    q.bind(3, stage);
    q.exec();
    return Status();
  });
}

}  // namespace ferry
