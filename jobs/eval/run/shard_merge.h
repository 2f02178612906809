// A sharded eval's parts joined into the report of the whole: each shard decoded a
// contiguous part of the prompt set (EvalReport::shard), so the merge concatenates
// the per-prompt rows in order and sums the counts (acceptance histograms, accepted
// slots, steps, forwards, tokens), then computes τ and every rate from them exactly as
// one unsplit eval does (finish_decode_run): the same τ to the last bit, not an
// average of averages. Times are summed (wall time: the slowest shard). The gate is
// judged on the merged report only. Plain function, no libtorch; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/run/eval_report.h"

namespace ferry::eval {

/// `shards[i]` is shard i of shards.size(), run as `stages[i]` (names for the report;
/// may be empty). Fails, naming the shard (its stage and its report's host), when the
/// parts do not make one eval: a missing or repeated shard, another prompt set, drafter
/// or block size, a part whose counts do not add up, or one that read other files
/// under the same paths (EvalReport::fingerprints differ) or does not say what it read
/// (no fingerprints: a ferry-eval older than them).
Result<EvalReport> merge_shard_reports(const std::vector<EvalReport>& shards, const std::vector<std::string>& stages,
                                       std::optional<double> min_tau, std::optional<double> min_ratio_to_reference);

}  // namespace ferry::eval
