#include "jobs/eval_remote/remote_eval_factory.h"

#include "jobs/eval_remote/remote_eval_stage.h"

namespace ferry {

std::shared_ptr<StageRunner> make_remote_eval_stage(const std::string& host, const nlohmann::json& inputs,
                                                    nlohmann::json engine, StageEnv& env, const AttemptId& id) {
  RemoteEvalSpec spec;
  spec.host = host;
  spec.attempt = id;
  for (const char* key : {"target", "drafter", "reference", "prompts", "tokenizer"}) {
    engine[key] = inputs.value(key, std::string());
  }
  const std::string prompts = engine["prompts"];
  const std::string prefix = kCoordinatorPrefix;
  if (prompts.rfind(prefix, 0) == 0) {
    spec.coordinator_prompts = env.local_path(prompts.substr(prefix.size()));
    engine["prompts"] = "";  // the shipped copy's path, once it is on the host
  }
  spec.engine = std::move(engine);
  const nlohmann::json env_in = inputs.value("env", nlohmann::json::object());
  for (auto& [k, v] : env_in.items()) {
    if (v.is_string()) spec.env[k] = v.get<std::string>();
  }
  spec.timeout_s = inputs.value("timeout_s", 0.0);
  spec.worker = local_eval_worker_path();
  return std::make_shared<RemoteEvalStage>(env, std::move(spec));
}

}  // namespace ferry
