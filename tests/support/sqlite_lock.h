// Test support: a real `sqlite3` process holding a ferry database's write lock, the
// way a person's sqlite3 shell or a backup would (review F5: a lock held longer
// than SQLite's busy timeout must be waited out, never kill jobs).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace ferry::testing {

/// Starts `sqlite3 db`: BEGIN IMMEDIATE and a write to `runs` (the write lock is
/// now held), prints "locked", runs the shell command `hold`, then commits.
/// Returns the process once "locked" is in `log_path` (its output), or -1 when
/// that did not happen within `timeout`. The SQL goes to `log_path`.sql.
pid_t hold_sqlite_write_lock(const std::string& db, const std::string& hold, const std::string& log_path,
                             std::chrono::milliseconds timeout);

}  // namespace ferry::testing
