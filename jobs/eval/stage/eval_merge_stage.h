// EvalMergeStage: the merge of a sharded eval (workflows/eval_shards.h). Its shard
// stages have all succeeded (it needs them); it reads the eval report each recorded
// (StageEnv::stage_report), typed (eval_report_json.h), joins them into the report
// of the whole prompt set (shard_merge.h), judges the gate on it, and ends exactly as
// an unsplit eval does (eval_outcome.h): τ and friends as outputs and metrics, the
// report as its eval.report event and in its log. A shard whose report is missing,
// malformed or not a part of the same eval fails the merge, naming the shard.
// Decodes nothing; runs on the io thread and ends at once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jobs/stage_runner.h"

namespace ferry {

/// Does not re-attach (StageRunner::reattaches): it ends at once, in the coordinator,
/// and nothing of it runs on to re-attach to.
class EvalMergeStage : public StageRunnerBase<Reattach::kNo> {
 public:
  EvalMergeStage(StageEnv& env, std::vector<std::string> shards, std::optional<double> min_tau,
                 std::optional<double> min_ratio_to_reference);
  void start(std::function<void(StageOutcome)> done) override;
  void cancel(bool) override {}

  /// The merged result as the engine writes one (jobs/eval/run/eval_plugin_api.h), or an
  /// error result naming the shard; what start() hands to eval_outcome.
  std::string merged_result();

 private:
  std::string merge_recorded();

  StageEnv& env_;
  std::vector<std::string> shards_;
  std::optional<double> min_tau_, min_ratio_;
};

}  // namespace ferry
