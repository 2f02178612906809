// What an eval read, by content (eval::InputFingerprint: the target, drafters,
// tokenizer and prompts as model_fingerprint and prompts_fingerprint saw them): one
// eval's as a table on its run's page, and several runs' newest evals side by side
// on `ferry report A B`, each input marked the same in every run or not. It answers
// "did these runs evaluate the same target on the same prompts?" without trusting
// that the same path held the same files. Plain functions; any thread.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/eval/run/eval_report.h"

namespace ferry::report {

/// The element ids of the two tables.
inline constexpr const char* kInputsId = "inputs";
inline constexpr const char* kInputsCompareId = "inputs-compare";

/// One eval's inputs, a row each (class "input"); "" when it names none (a report of
/// a ferry-eval older than fingerprints).
std::string inputs_table_html(const std::vector<eval::InputFingerprint>& inputs);

/// `runs` (compare_report's "runs": run reports, each with its newest eval or none),
/// input by input in the order first seen: {"what", "runs": [{"run", "digest",
/// "copy_manifest"}, or {"run", "recorded"} where that run's eval did not read it
/// ("recorded": false, it recorded no inputs at all)], "same", "verdict"}. An input
/// is "same" when every run read it with one digest and the copy manifests that are
/// there agree (a manifest covers every byte; the digest samples large files);
/// "unknown" when none of those differ but a run recorded nothing (no eval, or one
/// older than fingerprints); else "differs".
nlohmann::json compare_inputs(const nlohmann::json& runs);

/// compare_inputs' rows as a table: a column per run, rows of class "input-same",
/// "input-unknown" or "input-differs".
std::string inputs_compare_html(const nlohmann::json& inputs);

}  // namespace ferry::report
