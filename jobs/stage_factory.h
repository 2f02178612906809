// The runner of a stage attempt, from its resolved spec (stage_spec.h): the one
// place that maps a stage to the runner of its kind (and an eval to that of its mode).
#pragma once

#include <memory>
#include <string>

#include "jobs/copy/copy_stage.h"
#include "jobs/stage_runner.h"
#include "jobs/stage_spec.h"
#include "workflows/model.h"

namespace ferry {

/// How an eval stage runs, and so which runner it gets.
enum class EvalMode {
  kLocal,   // no host: a `ferry-eval worker` child of the coordinator (EvalStage)
  kRemote,  // on its host, the worker a job there (RemoteEvalStage)
  kWatch,   // on its host, every checkpoint a trainer finishes (CheckpointWatchStage)
  kMerge,   // a sharded eval's merge of its shards' reports, in the coordinator (EvalMergeStage)
};

/// The mode of a resolved eval stage on `host` ("" = in the coordinator).
EvalMode eval_mode(const EvalStageSpec& eval, const std::string& host);
/// The mode of an eval stage of the workflow, before it is resolved: the same answer.
EvalMode eval_mode(const workflow::Stage& stage);

/// Whether `ferry resume` re-attaches to a running attempt of `stage`: the answer of
/// the runner it gets (StageRunner::reattaches), asked before any runner exists.
bool stage_reattaches(const workflow::Stage& stage);

std::shared_ptr<StageRunner> make_stage_runner(const StageSpec& stage, StageEnv& env, const AttemptId& id);

}  // namespace ferry
