#include "tests/support/sqlite_lock.h"

#include "tests/support/process.h"

namespace ferry::testing {

pid_t hold_sqlite_write_lock(const std::string& db, const std::string& hold, const std::string& log_path,
                             std::chrono::milliseconds timeout) {
  const std::string sql = log_path + ".sql";
  write_text(sql, ".timeout 10000\nBEGIN IMMEDIATE;\nUPDATE runs SET error=error;\n.print locked\n.shell " + hold +
                      "\nCOMMIT;\n");
  pid_t p = spawn_process({"sh", "-c", "exec sqlite3 -bail '" + db + "' < '" + sql + "'"}, {}, log_path);
  if (p <= 0) return -1;
  if (!wait_until([&] { return read_text(log_path).find("locked") != std::string::npos; }, timeout)) return -1;
  return p;
}

}  // namespace ferry::testing
