// `ferry eval`: the drafter eval run standalone from the command line.
//   ferry eval --target D --drafter D [--reference D] --prompts F [--max-new-tokens N]
//              [--block-size B] [--device cpu] [--dtype float32] [--threads N]
//              [--min-tau X] [--min-ratio X] [--no-baseline] [--json]
//              [--tokenizer DIR] [--prompt-format raw|chat|chat-no-think] [--show N]
// Prints the report (text, or JSON with --json) on stdout, progress on stderr.
// Exit codes: 0 ok, 1 gate failed, 2 usage or bad input / load error.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/run/eval_runner.h"

namespace ferry::eval {

/// Exit codes of `ferry eval`.
constexpr int kEvalExitOk = 0;
constexpr int kEvalExitGateFailed = 1;
constexpr int kEvalExitUsage = 2;

/// Parses the flags after "eval"; `json` is set by --json.
Result<EvalSpec> parse_eval_args(const std::vector<std::string>& args, bool* json);

/// argv[0] == "eval".
int eval_command_main(int argc, char** argv);

}  // namespace ferry::eval
