#include "jobs/eval/stage/remote/remote_eval_factory.h"

#include "jobs/eval/stage/remote/remote_eval_stage.h"

namespace ferry {

std::shared_ptr<StageRunner> make_remote_eval_stage(const std::string& host, const EvalStageSpec& eval, int64_t log_max,
                                                    StageEnv& env, const AttemptId& id) {
  RemoteEvalSpec spec;
  spec.host = host;
  spec.attempt = id;
  EvalStageSpec here = eval;
  here.host = host;  // named in its report (a sharded eval's merge names a shard's host)
  nlohmann::json engine = eval_engine_json(here);
  const std::string prefix = kCoordinatorPrefix;
  if (eval.prompts.rfind(prefix, 0) == 0) {
    spec.coordinator_prompts.emplace_back("/prompts", env.local_path(eval.prompts.substr(prefix.size())));
    engine["prompts"] = "";  // the shipped copy's path, once it is on the host
  }
  for (size_t i = 0; i < eval.datasets.size(); ++i) {  // each named dataset's file alike
    const std::string& file = eval.datasets[i].prompts;
    if (file.rfind(prefix, 0) != 0) continue;
    const std::string where = "/datasets/" + std::to_string(i) + "/prompts";
    spec.coordinator_prompts.emplace_back(where, env.local_path(file.substr(prefix.size())));
    engine[nlohmann::json::json_pointer(where)] = "";
  }
  spec.engine = std::move(engine);
  spec.env = eval.env;
  spec.timeout_s = eval.timeout_s;
  spec.log_max = log_max;
  spec.slurm = eval.slurm;
  spec.worker = local_eval_worker_path();
  return std::make_shared<RemoteEvalStage>(env, std::move(spec));
}

}  // namespace ferry
