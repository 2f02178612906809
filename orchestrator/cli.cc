#include "orchestrator/cli.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "agents/file_util.h"

namespace ferry::cli {
namespace {

const char* kUsage = R"(ferry — run multi-host ML evaluation workflows

usage: ferry COMMAND [ARGS] [--db PATH]

commands:
  run F [-p k=v]...      run workflow file F; prints progress, then the status table
  resume RUN             finish RUN: re-attach running stages, re-run failed ones,
                         keep stages that succeeded with the same inputs
  cancel RUN             stop RUN (graceful: SIGTERM to running jobs)
  status [RUN] [--json]  one row per stage of RUN (default: the newest run)
  runs [--json]          every run, newest first
  logs RUN STAGE [-f] [--attempt N]
                         a stage's output (-f follows it until the stage ends)
  validate F             check workflow file F; lists every error as file:line:col
  eval --target D --drafter D --prompts F [...]
                         run the drafter eval standalone (`ferry eval --help`)
  tokenize --model D [--chat|--chat-no-think] [--json] [TEXT | -]
                         the ids and pieces the model's tokenizer makes of TEXT
  hosts check F [--json] reachability, host keys, agent, disk, cores, memory, GPUs

common options:
  --db PATH              state database (default $FERRY_HOME/ferry.db,
                         FERRY_HOME defaulting to ~/.local/share/ferry)
  --help                 this text, or a command's

exit codes: 0 ok, 1 run or gate failed, 2 usage or invalid workflow,
            3 not found, 4 internal or state-store error, 130 cancelled
)";

}  // namespace

Common parse_common(int argc, char** argv) {
  Common c;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--db" && i + 1 < argc) {
      c.db = argv[++i];
    } else if (a.rfind("--db=", 0) == 0) {
      c.db = a.substr(5);
    } else if (a == "--json") {
      c.json = true;
    } else if (a == "--help" || a == "-h") {
      c.help = true;
    } else {
      c.args.push_back(a);
    }
  }
  if (c.db.empty()) c.db = Store::default_path();
  return c;
}

Result<std::unique_ptr<Store>> open_store(const Common& c) { return Store::open(c.db); }
Result<std::unique_ptr<Store>> open_store_read_only(const Common& c) { return Store::open_read_only(c.db); }

bool use_color(int fd) {
  const char* no = std::getenv("NO_COLOR");
  if (no && *no) return false;
  return ::isatty(fd) == 1;
}

std::string logs_dir(const std::string& db_path) { return dirname_of(db_path) + "/logs"; }
std::string ferry_home(const std::string& db_path) { return dirname_of(db_path); }

int fail(const Status& s) {
  std::cerr << "ferry: " << s.message() << "\n";
  switch (s.code()) {
    case StatusCode::kInvalidArgument: return kExitUsage;
    case StatusCode::kNotFound: return kExitNotFound;
    case StatusCode::kCancelled: return kExitCancelled;
    default: return kExitInternal;
  }
}

int cli_main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  if (argc >= 2 && std::strcmp(argv[1], "eval") == 0) return cmd_eval(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "tokenize") == 0) return cmd_tokenize(argc - 1, argv + 1);
  Common c = parse_common(argc, argv);
  if (c.args.empty()) {
    std::cout << kUsage;
    return c.help ? kExitOk : kExitUsage;
  }
  const std::string cmd = c.args[0];
  if (cmd == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (cmd == "run") return cmd_run(c);
  if (cmd == "resume") return cmd_resume(c);
  if (cmd == "cancel") return cmd_cancel(c);
  if (cmd == "validate") return cmd_validate(c);
  if (cmd == "status") return cmd_status(c);
  if (cmd == "runs") return cmd_runs(c);
  if (cmd == "logs") return cmd_logs(c);
  if (cmd == "hosts") return cmd_hosts(c);
  std::cerr << "ferry: unknown command '" << cmd << "'\n\n" << kUsage;
  return kExitUsage;
}

}  // namespace ferry::cli
