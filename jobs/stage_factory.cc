#include "jobs/stage_factory.h"

#include "jobs/command/command_stage.h"
#include "jobs/copy/copy_stage.h"
#include "jobs/eval/stage/eval_merge_stage.h"
#include "jobs/eval/stage/eval_stage.h"
#include "jobs/eval/stage/remote/remote_eval_factory.h"
#include "jobs/eval/stage/remote/remote_eval_stage.h"
#include "jobs/eval/stage/watch/checkpoint_watch_stage.h"

namespace ferry {

namespace {

// A watching eval has a host too, and a merge has none: they are told apart first.
EvalMode eval_mode_of(bool watches, bool merges, const std::string& host) {
  if (watches) return EvalMode::kWatch;
  if (merges) return EvalMode::kMerge;
  return host.empty() ? EvalMode::kLocal : EvalMode::kRemote;
}

// On the coordinator's machine, in a worker child: paths relative to the workflow file like keep_local.
std::shared_ptr<StageRunner> local_eval_runner(const EvalStageSpec& e, StageEnv& env) {
  EvalStageSpec local = e;
  for (std::string* path : {&local.target, &local.drafter, &local.reference, &local.prompts, &local.tokenizer}) {
    if (!path->empty()) *path = env.local_path(*path);
  }
  for (auto& d : local.datasets) d.prompts = env.local_path(d.prompts);
  return std::make_shared<EvalStage>(env, eval_engine_json(local), local_eval_worker_path());
}

std::shared_ptr<StageRunner> eval_runner(const StageSpec& stage, const EvalStageSpec& e, StageEnv& env,
                                         const AttemptId& id) {
  switch (eval_mode(e, stage.host)) {
    case EvalMode::kWatch: return std::make_shared<CheckpointWatchStage>(env, stage.host, e, stage.log_max, id);
    case EvalMode::kMerge: return std::make_shared<EvalMergeStage>(env, e.shards, e.min_tau, e.min_ratio_to_reference);
    case EvalMode::kRemote: return make_remote_eval_stage(stage.host, e, stage.log_max, env, id);
    case EvalMode::kLocal: break;
  }
  return local_eval_runner(e, env);
}

}  // namespace

EvalMode eval_mode(const EvalStageSpec& eval, const std::string& host) {
  return eval_mode_of(eval.watch.has_value(), !eval.shards.empty(), host);
}

// The resolver sets `watch` when the stage watches and passes `shards` on as they are.
EvalMode eval_mode(const workflow::Stage& stage) {
  return eval_mode_of(!stage.watch.stage.empty(), !stage.shards.empty(), stage.host);
}

bool stage_reattaches(const workflow::Stage& stage) {
  switch (stage.kind) {
    case workflow::StageKind::kCommand: return CommandStage::kReattaches;
    case workflow::StageKind::kCopy: return CopyStage::kReattaches;
    case workflow::StageKind::kEval: break;
  }
  switch (eval_mode(stage)) {
    case EvalMode::kLocal: return EvalStage::kReattaches;
    case EvalMode::kRemote: return RemoteEvalStage::kReattaches;
    case EvalMode::kWatch: return CheckpointWatchStage::kReattaches;
    case EvalMode::kMerge: return EvalMergeStage::kReattaches;
  }
  return false;
}

std::shared_ptr<StageRunner> make_stage_runner(const StageSpec& stage, StageEnv& env, const AttemptId& id) {
  if (auto* c = std::get_if<CommandStageSpec>(&stage.spec))
    return std::make_shared<CommandStage>(env, CommandSpec{stage.host, id, *c, stage.log_max});
  if (auto* c = std::get_if<CopyStageSpec>(&stage.spec)) {
    CopySpec spec = copy_spec(*c, env, id);
    spec.relay_writes_log = true;
    return std::make_shared<CopyStage>(env, std::move(spec));
  }
  return eval_runner(stage, std::get<EvalStageSpec>(stage.spec), env, id);
}

}  // namespace ferry
