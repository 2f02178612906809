#include "orchestrator/cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "base/file_util.h"
#include "base/version.h"
#include "jobs/eval/run/eval_flags.h"
#include "protocol/frame.h"
#include "workflows/diagnostics.h"

namespace ferry::cli {
namespace {

constexpr char kDescription[] = "ferry — run multi-host ML evaluation workflows";
constexpr char kFooter[] =
    "eval: `ferry eval --target D --drafter D --prompts F [...]` runs the drafter eval standalone\n"
    "      (`ferry eval --help`).\n"
    "tokenize: `ferry tokenize --model D [--chat|--chat-no-think] [--json] [TEXT | -]`.\n"
    "example: ferry examples ex (copies the example workflows into ex/), then ferry run ex/hello/workflow.yaml,\n"
    "         ferry status, ferry logs last prepare, ferry report\n"
    "exit codes: 0 ok, 1 run or gate failed, 2 usage or invalid workflow,\n"
    "            3 not found, 4 internal or state-store error, 130 cancelled\n";

std::string version_text() {
  return std::string("ferry ") + kFerryVersion + " (agent protocol " + std::to_string(protocol::kProtocolVersion) + ")";
}

void add_db(CLI::App* sub, Common* c) {
  sub->add_option("--db", c->db,
                  "state database (default $FERRY_HOME/ferry.db, FERRY_HOME defaulting to "
                  "~/.local/share/ferry)");
}

// The subcommand that was being parsed when an error came: its usage is the useful one.
const CLI::App* innermost(const CLI::App& app) {
  const CLI::App* at = &app;
  for (;;) {
    auto subs = at->get_subcommands();
    if (subs.empty()) return at;
    at = subs.front();
  }
}

// Every command's shell-completion words, from its declaration. Hidden commands
// (no group: __complete) are left out; eval's flags come from the eval engine's list.
std::vector<CompletionCommand> completion_commands(const CLI::App& app) {
  std::vector<CompletionCommand> out;
  std::function<void(const CLI::App&, const std::string&)> walk = [&](const CLI::App& at, const std::string& prefix) {
    for (const CLI::App* sub : at.get_subcommands({})) {
      if (sub->get_group().empty()) continue;
      CompletionCommand c;
      c.path = prefix + sub->get_name();
      for (const CLI::App* inner : sub->get_subcommands({})) c.words.push_back(inner->get_name());
      for (const CLI::Option* opt : sub->get_options()) {
        if (!opt->nonpositional()) {
          const std::string& name = opt->get_name();
          c.arguments.push_back(name == "workflow" ? "file" : name == "run" || name == "stage" ? name : "any");
          if (name == "shell") {
            c.words = {"bash", "zsh"};
            c.arguments.back() = "none";
          }
          continue;
        }
        std::vector<std::string> names;
        for (const auto& n : opt->get_snames()) names.push_back("-" + n);
        for (const auto& n : opt->get_lnames()) names.push_back("--" + n);
        c.flags.insert(c.flags.end(), names.begin(), names.end());
        if (opt->get_expected_max() != 0) c.valued.insert(c.valued.end(), names.begin(), names.end());
      }
      if (c.path == "eval") {
        c.flags.clear();
        for (const eval::EvalFlag& f : eval::kEvalFlags) {
          c.flags.push_back(f.name);
          if (f.takes_value) c.valued.push_back(f.name);
          if (*f.choices) c.choices[f.name] = f.choices;
        }
      }
      if (c.arguments.empty()) c.arguments.push_back("none");
      out.push_back(c);
      walk(*sub, c.path + " ");
    }
  };
  walk(app, "");
  return out;
}

// The example at the end of a command's --help.
void example(CLI::App* sub, const std::string& text) { sub->footer("example:\n  " + text); }

// What the parsed command line runs, and the options the store-reading commands share.
struct Invocation {
  Common common;
  std::function<int()> action;  // set by the subcommand that was parsed
};

// `sub` runs `action` once the whole line is parsed: the options it reads, and
// --db's default, are known only then.
void runs(CLI::App* sub, Invocation& in, std::function<int()> action) {
  sub->callback([&in, action = std::move(action)] { in.action = action; });
}

// A command that reads the store: --db, its example, and what it runs.
void store_command(CLI::App* sub, Invocation& in, const std::string& example_text, std::function<int()> action) {
  add_db(sub, &in.common);
  example(sub, example_text);
  runs(sub, in, std::move(action));
}

// One function per command: its flags, its example and what it runs. Each owns
// its options; the callbacks keep them alive as long as the app.

void add_run(CLI::App& app, Invocation& in) {
  auto run = std::make_shared<RunOptions>();
  auto* run_cmd = app.add_subcommand("run",
                                     "run workflow file F; prints progress, then the status table. "
                                     "Ctrl-C once cancels gracefully, twice kills running jobs");
  run_cmd->add_option("workflow", run->workflow, "the workflow file")->required();
  run_cmd->add_option("-p,--param", run->params, "set a workflow param (NAME=VALUE), repeatable")
      ->allow_extra_args(false);
  run_cmd->add_flag("--json", run->json, "progress to stderr, the finished run as JSON on stdout");
  run_cmd->add_flag("-n,--dry-run", run->dry_run, "print the stages it would run, and why; run nothing");
  store_command(run_cmd, in, "ferry run examples/hello/workflow.yaml -p greeting=\"hi there\"",
                [&in, run] { return cmd_run(in.common, *run); });
}

void add_resume(CLI::App& app, Invocation& in) {
  auto resume = std::make_shared<ResumeOptions>();
  auto* resume_cmd = app.add_subcommand("resume",
                                        "finish RUN with its workflow file read again: re-attach running "
                                        "stages, re-run failed ones and those whose definition changed "
                                        "(with what follows them), keep the rest that succeeded");
  resume_cmd->add_option("run", resume->run, "the run id (or 'last')")->required();
  resume_cmd->add_flag("--json", resume->json, "progress to stderr, the finished run as JSON on stdout");
  resume_cmd->add_option("--workflow", resume->workflow, "read this file instead of the run's own");
  resume_cmd->add_flag("--stored", resume->stored, "resume with the workflow as the run stored it, not the file");
  resume_cmd->add_flag("-n,--dry-run", resume->dry_run, "print what would run, and why; run nothing");
  resume_cmd->add_flag("--restart-changed", resume->restart_changed,
                       "stop and start again a running stage whose definition changed (default: keep it running)");
  store_command(resume_cmd, in, "ferry resume last", [&in, resume] { return cmd_resume(in.common, *resume); });
}

void add_cancel(CLI::App& app, Invocation& in) {
  auto cancel = std::make_shared<RunRef>();
  auto* cancel_cmd = app.add_subcommand("cancel", "stop RUN (graceful: SIGTERM to running jobs)");
  cancel_cmd->add_option("run", cancel->run, "the run id (or 'last')")->required();
  store_command(cancel_cmd, in, "ferry cancel last", [&in, cancel] { return cmd_cancel(in.common, *cancel); });
}

void add_status(CLI::App& app, Invocation& in) {
  auto status = std::make_shared<StatusOptions>();
  auto* status_cmd = app.add_subcommand("status", "one row per stage of RUN (default: the newest run)");
  status_cmd->add_option("run", status->run, "the run id (default: the newest run)");
  status_cmd->add_flag("--json", status->json, "the run and its stages as JSON");
  status_cmd->add_flag("-w,--watch", status->watch, "redraw until the run ends; exits as `ferry run` would");
  status_cmd->add_option("--interval", status->interval_s, "seconds between redraws with --watch")
      ->check(CLI::Range(0.05, 3600.0));
  status_cmd->get_option("--json")->excludes("--watch");
  store_command(status_cmd, in, "ferry status --watch", [&in, status] { return cmd_status(in.common, *status); });
}

void add_runs(CLI::App& app, Invocation& in) {
  auto json = std::make_shared<bool>(false);
  auto* runs_cmd = app.add_subcommand("runs", "every run, newest first");
  runs_cmd->add_flag("--json", *json, "as JSON");
  store_command(runs_cmd, in, "ferry runs --json", [&in, json] { return cmd_runs(in.common, *json); });
}

void add_logs(CLI::App& app, Invocation& in) {
  auto logs = std::make_shared<LogsOptions>();
  auto* logs_cmd = app.add_subcommand("logs", "a stage's output (stdout and stderr)");
  logs_cmd->add_option("run", logs->run, "the run id (or 'last')")->required();
  logs_cmd->add_option("stage", logs->stage, "the stage")->required();
  logs_cmd->add_flag("-f,--follow", logs->follow, "follow the output until the stage ends");
  logs_cmd->add_option("-n,--tail", logs->tail, "only the last N lines (read from the end: fast on any log)")
      ->check(CLI::Range(1, 1000000));
  logs_cmd->add_option("--attempt", logs->attempt, "an earlier attempt (default: the newest)")
      ->check(CLI::PositiveNumber);
  store_command(logs_cmd, in, "ferry logs last prepare --follow", [&in, logs] { return cmd_logs(in.common, *logs); });
}

void add_report(CLI::App& app, Invocation& in) {
  auto report = std::make_shared<ReportOptions>();
  auto* report_cmd = app.add_subcommand("report",
                                        "one self-contained HTML page of RUN (default: the newest run): "
                                        "stage timeline, copies, τ per checkpoint, acceptance, drafter "
                                        "diff, per-prompt responses; prints the file's path");
  report_cmd->add_option("run", report->runs,
                         "the run id (default: the newest run); several: their evals side by side on one page");
  report_cmd->add_option("-o,--output", report->out, "the file to write (default: $FERRY_HOME/reports/RUN.html)");
  report_cmd->add_flag("--json", report->json, "the report's data as JSON (on stdout, or to -o FILE)");
  report_cmd->add_option("--metrics", report->metrics,
                         "also write every metric as flat rows to FILE: CSV if it ends in .csv, else JSONL; "
                         "'-' for JSONL on stdout");
  example(report_cmd, "ferry report last -o run.html --metrics run.csv");
  store_command(report_cmd, in,
                "ferry report dflash-1 dflash-2 -o compare.html   # τ curves side by side, drafter diff",
                [&in, report] { return cmd_report(in.common, *report); });
}

void add_validate(CLI::App& app, Invocation& in) {
  auto validate = std::make_shared<FileOptions>();
  auto* validate_cmd = app.add_subcommand("validate", "check workflow file F; lists every error as file:line:col");
  validate_cmd->add_option("workflow", validate->workflow, "the workflow file")->required();
  validate_cmd->add_flag("--json", validate->json, "the result (or every error, with its place) as JSON");
  example(validate_cmd, "ferry validate examples/hello/workflow.yaml");
  runs(validate_cmd, in, [validate] { return cmd_validate(*validate); });
}

void add_hosts(CLI::App& app, Invocation& in) {
  auto hosts = std::make_shared<FileOptions>();
  auto* hosts_cmd = app.add_subcommand("hosts", "the hosts of a workflow");
  example(hosts_cmd, "ferry hosts check examples/hello/workflow.yaml");
  hosts_cmd->require_subcommand(1);
  auto* check_cmd = hosts_cmd->add_subcommand(
      "check",
      "connects to every host as a run would (host key, auth, agent) and reports agent version, cores, "
      "memory, free disk, GPUs, and which hosts reach which");
  check_cmd->add_option("workflow", hosts->workflow, "the workflow file")->required();
  check_cmd->add_flag("--json", hosts->json, "as JSON");
  store_command(check_cmd, in, "ferry hosts check examples/hello/workflow.yaml",
                [&in, hosts] { return cmd_hosts_check(in.common, *hosts); });
}

void add_completion(CLI::App& app, Invocation& in) {
  auto shell = std::make_shared<std::string>();
  auto* completion_cmd = app.add_subcommand("completion", "a shell completion script for ferry on stdout");
  completion_cmd->add_option("shell", *shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  example(completion_cmd, "source <(ferry completion bash)   # or put it in ~/.bashrc");
  runs(completion_cmd, in, [&app, shell] { return cmd_completion(*shell, completion_commands(app)); });
}

void add_examples(CLI::App& app, Invocation& in) {
  auto dir = std::make_shared<std::string>();
  auto* examples_cmd = app.add_subcommand("examples",
                                          "copy the example workflows that came with ferry into DIR "
                                          "(never over a file there), then says what to run");
  examples_cmd->add_option("dir", *dir, "the folder to copy them into (made if missing)")->required();
  example(examples_cmd, "ferry examples ex && ferry run ex/first/workflow.yaml");
  runs(examples_cmd, in, [dir] { return cmd_examples(*dir); });
}

void add_schema(CLI::App& app, Invocation& in) {
  auto* schema_cmd = app.add_subcommand("schema",
                                        "the workflow language as a JSON Schema, for editors "
                                        "(yaml-language-server, VS Code's YAML extension)");
  example(schema_cmd,
          "ferry schema > ~/.config/ferry-workflow.schema.json   # then, first line of a workflow:\n"
          "  # yaml-language-server: $schema=/home/you/.config/ferry-workflow.schema.json");
  runs(schema_cmd, in, [] { return cmd_schema(); });
}

// Hidden (no group): what the completion script asks for run ids and stage names.
void add_complete_words(CLI::App& app, Invocation& in) {
  auto what = std::make_shared<std::string>(), run = std::make_shared<std::string>();
  auto* complete_cmd = app.add_subcommand("__complete", "")->group("");
  complete_cmd->add_option("what", *what)->required()->check(CLI::IsMember({"runs", "stages"}));
  complete_cmd->add_option("run", *run);
  add_db(complete_cmd, &in.common);
  runs(complete_cmd, in, [&in, what, run] { return cmd_complete_words(in.common, *what, *run); });
}

// The commands in the order --help lists them, as ninja's table of subtools.
using DeclareCommand = void (*)(CLI::App& app, Invocation& in);
const DeclareCommand kCommands[] = {
    add_run,      add_resume, add_cancel,     add_status,   add_runs,   add_logs,           add_report,
    add_validate, add_hosts,  add_completion, add_examples, add_schema, add_complete_words,
};

// Commands that parse their own flags (the eval engine runs standalone too, as
// ferry-eval): cli_main hands them the line before CLI11 reads it; --help lists them.
struct OwnParser {
  const char* name;
  const char* help;
  int (*run)(int argc, char** argv);
};
const OwnParser kOwnParsers[] = {
    {"eval", "run the drafter eval standalone (`ferry eval --help`)", cmd_eval},
    {"tokenize", "the ids and pieces the model's tokenizer makes of a text (`ferry tokenize --help`)", cmd_tokenize},
};

// What a usage error says: CLI11's words, but "unknown command 'sttaus' (did you mean
// 'status'?)" when the first word is no command (CLI11 says "A subcommand is required").
std::string usage_error(CLI::App& app, int argc, char** argv, const CLI::ParseError& e) {
  if (argc < 2 || argv[1][0] == '-') return e.what();
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == argv[1]) return e.what();
    if (!sub->get_group().empty()) names.push_back(sub->get_name());  // not the hidden __complete
  }
  return "unknown command '" + std::string(argv[1]) + "'" + workflow::did_you_mean_hint(argv[1], names);
}

// Parses the line; the exit code where the command line alone ends it (help,
// --version, a usage error), else nothing.
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << innermost(app)->help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion&) {
    std::cout << version_text() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::cerr << "ferry: " << usage_error(app, argc, argv, e) << "\n\n" << innermost(app)->help();
    return kExitUsage;
  }
  return std::nullopt;
}

// The last line of defence: a command that meets data it cannot read (a stored
// report or a host's answer of an odd shape) says so and exits, never terminates.
int run_guarded(const std::function<int()>& action) {
  try {
    return action();
  } catch (const std::exception& e) {
    std::cerr << "ferry: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace

// Never a shared fallback such as /tmp for the state: another user could own it.
static Status no_home() {
  return invalid_argument(
      "neither FERRY_HOME nor HOME is set: set one (the state database lives in $FERRY_HOME, "
      "default ~/.local/share/ferry), or pass --db");
}
Result<std::unique_ptr<Store>> open_store(const Common& c) {
  if (c.db.empty()) return no_home();
  return Store::open(c.db);
}
Result<std::unique_ptr<Store>> open_store_read_only(const Common& c) {
  if (c.db.empty()) return no_home();
  return Store::open_read_only(c.db);
}

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

int exit_for_state(RunState state) {
  switch (state) {
    case RunState::kSucceeded: return kExitOk;
    case RunState::kCancelled: return kExitCancelled;
    case RunState::kPending:
    case RunState::kRunning:
    case RunState::kFailed: return kExitFailed;
  }
  return kExitFailed;
}

int cli_main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  for (const OwnParser& own : kOwnParsers) {
    if (argc >= 2 && std::strcmp(argv[1], own.name) == 0) return own.run(argc - 1, argv + 1);
  }

  CLI::App app(kDescription, "ferry");
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  Invocation in;
  for (DeclareCommand declare : kCommands) declare(app, in);
  for (const OwnParser& own : kOwnParsers) app.add_subcommand(own.name, own.help);  // listed; handled above
  app.footer(kFooter);  // after the subcommands, which would otherwise inherit it

  if (std::optional<int> exit_code = parse(app, argc, argv)) return *exit_code;
  if (in.common.db.empty()) in.common.db = Store::default_path();
  if (!in.action) return kExitUsage;
  return run_guarded(in.action);
}

}  // namespace ferry::cli
