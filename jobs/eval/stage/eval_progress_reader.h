// Reads an eval's progress line (jobs/eval/run/eval_progress.h) as the stage's progress. The
// line comes from a host's log, so it is read as untrusted: only the known fields,
// each of its type and range, and nothing at all from a line that is not such an
// object. io thread or any.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "jobs/stage_runner.h"

namespace ferry {

/// `text` is a progress line without kEvalProgressPrefix. The stage's progress
/// ({"kind":"eval", phase, run, runs, prompts_done, prompts_total, tokens,
/// tokens_per_s, eta_s?, tau?}) when it is a JSON progress line, else nullopt.
std::optional<nlohmann::json> read_eval_progress(const std::string& text);

/// Passes one line of an eval worker's log on to the stage when it is a progress line
/// (kEvalProgressPrefix): its progress when it is a JSON one, else a note for the
/// terminal. Other lines (the report, libtorch's own) pass nothing.
void pass_on_eval_progress(const std::string& line, StageEnv& env);

}  // namespace ferry
