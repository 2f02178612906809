// The `ferry` command line: parsing, the documented exit codes, and one function
// per command. main() only calls cli_main(). Main thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "orchestrator/store.h"

namespace ferry::cli {

// Exit codes (README "Exit codes" lists the same).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;     // the run (or eval gate) failed
inline constexpr int kExitUsage = 2;      // bad command line or invalid workflow
inline constexpr int kExitNotFound = 3;   // no such run, stage or file
inline constexpr int kExitInternal = 4;   // state store or other internal error
inline constexpr int kExitCancelled = 130;

/// Options common to every command, taken out of argv before the command parses it.
struct Common {
  std::string db;  // --db, else Store::default_path()
  bool json = false;
  bool help = false;
  std::vector<std::string> args;  // the rest, command name first
};

Common parse_common(int argc, char** argv);
Result<std::unique_ptr<Store>> open_store(const Common& c);
Result<std::unique_ptr<Store>> open_store_read_only(const Common& c);
/// Colour only on a terminal, and never with NO_COLOR set.
bool use_color(int fd);
/// Where logs of runs in this store live: beside the database.
std::string logs_dir(const std::string& db_path);
std::string ferry_home(const std::string& db_path);
/// Prints a status error and returns the exit code for it.
int fail(const Status& s);

int cmd_run(const Common& c);
int cmd_resume(const Common& c);
int cmd_cancel(const Common& c);
int cmd_validate(const Common& c);
int cmd_status(const Common& c);
int cmd_runs(const Common& c);
int cmd_logs(const Common& c);
int cmd_eval(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_hosts(const Common& c);

int cli_main(int argc, char** argv);

}  // namespace ferry::cli
