// An EvalReport read back from its JSON (EvalReport::to_json): what the coordinator
// does with a report a host or a worker wrote, to merge a sharded eval's parts
// (shard_merge.h). The JSON is another party's: every field is checked for its type
// and a wrong one fails with its path ("candidate.response_taus[3] is a string, not a
// number"); absent fields keep their defaults. Arrays are bounded (json_fields.h).
// Plain function, no libtorch; any thread.
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "jobs/eval/run/eval_report.h"

namespace ferry::eval {

/// `j` as parse_peer_json gives it (depth already bounded).
Result<EvalReport> eval_report_from_json(const nlohmann::json& j);

/// A drafter diff (DrafterDiff::to_json) read back alike: `ferry report A B` stores
/// the diff of two runs' checkpoints in its JSON and draws the page from it.
Result<DrafterDiff> drafter_diff_from_json(const nlohmann::json& j);

}  // namespace ferry::eval
