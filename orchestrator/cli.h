// The `ferry` command line: flags declared once per command (CLI11, in cli.cc
// only), the documented exit codes, and one function per command. main() only
// calls cli_main(). Main thread.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "orchestrator/store.h"

namespace ferry::cli {

// Exit codes (the README's "The command line at a glance" lists the same).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;     // the run (or eval gate) failed
inline constexpr int kExitUsage = 2;      // bad command line or invalid workflow
inline constexpr int kExitNotFound = 3;   // no such run, stage or file
inline constexpr int kExitInternal = 4;   // state store or other internal error
inline constexpr int kExitCancelled = 130;

/// Options every command that reads the state store takes.
struct Common {
  std::string db;  // --db, else Store::default_path()
};

struct RunOptions {
  std::string workflow;
  std::vector<std::string> params;  // NAME=VALUE, from -p
  bool json = false;                // progress to stderr, the final run as JSON on stdout
  bool dry_run = false;             // print the plan, run nothing
};
struct ResumeOptions {
  std::string run;
  bool json = false;
  std::string workflow;          // "" = the run's own file, read again
  bool stored = false;           // the workflow as the run stored it, not the file
  bool dry_run = false;          // print the plan, run nothing
  bool restart_changed = false;  // a running stage whose definition changed starts again
};
struct RunRef {  // cancel
  std::string run;
  bool json = false;
};
struct StatusOptions {
  std::string run = "last";
  bool json = false;
  bool watch = false;
  double interval_s = 1.0;
};
struct LogsOptions {
  std::string run, stage;
  bool follow = false;
  int attempt = 0;  // 0: the newest
  int tail = 0;     // > 0: only the last this many lines
};
struct ReportOptions {
  std::vector<std::string> runs;  // empty: the newest run; two or more: side by side (compare_report.h)
  std::string out;      // -o: the HTML file (default $FERRY_HOME/reports/<run>.html); with --json, the JSON file
  bool json = false;    // the report's data as JSON instead of the page
  std::string metrics;  // --metrics FILE: flat rows, CSV when FILE ends in .csv, else JSONL; "-": JSONL on stdout
};
struct FileOptions {  // validate, hosts check
  std::string workflow;
  bool json = false;
};

Result<std::unique_ptr<Store>> open_store(const Common& c);
Result<std::unique_ptr<Store>> open_store_read_only(const Common& c);
/// Colour only on a terminal, and never with NO_COLOR set.
bool use_color(int fd);
/// Where logs of runs in this store live: beside the database.
std::string logs_dir(const std::string& db_path);
std::string ferry_home(const std::string& db_path);
/// Prints a status error and returns the exit code for it.
int fail(const Status& s);
/// The exit code for a run's final state.
int exit_for_state(RunState state);

int cmd_run(const Common& c, const RunOptions& o);
int cmd_resume(const Common& c, const ResumeOptions& o);
int cmd_cancel(const Common& c, const RunRef& o);
int cmd_validate(const FileOptions& o);
int cmd_status(const Common& c, const StatusOptions& o);
int cmd_runs(const Common& c, bool json);
int cmd_logs(const Common& c, const LogsOptions& o);
int cmd_report(const Common& c, const ReportOptions& o);
int cmd_eval(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_hosts_check(const Common& c, const FileOptions& o);

/// A command as shell completion sees it: "run", "hosts check", ...
struct CompletionCommand {
  std::string path;
  std::vector<std::string> words;              // its subcommands, or the values its argument takes
  std::vector<std::string> flags;              // --json, -p, ...
  std::vector<std::string> valued;             // those of its flags that take a value (-p NAME=VALUE)
  std::map<std::string, std::string> choices;  // a flag's values, space-separated (--device: "cpu cuda")
  std::vector<std::string> arguments;          // what each positional takes: file, run, stage or any; none: nothing
};
/// `ferry completion bash|zsh`.
int cmd_completion(const std::string& shell, const std::vector<CompletionCommand>& commands);
/// `ferry __complete runs|stages [RUN]` (hidden; the completion script calls it):
/// run ids, newest first, or RUN's stage names, one a line, from the store opened
/// read-only. Prints nothing where there is no store or no such run.
int cmd_complete_words(const Common& c, const std::string& what, const std::string& run);
/// `ferry examples DIR`: the example workflows shipped with this ferry, copied into DIR.
int cmd_examples(const std::string& dir);
/// `ferry schema`: the workflow language's JSON Schema.
int cmd_schema();

int cli_main(int argc, char** argv);

}  // namespace ferry::cli
