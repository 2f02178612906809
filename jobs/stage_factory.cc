#include "jobs/stage_factory.h"

#include "jobs/copy/copy_stage.h"
#include "jobs/eval_remote/remote_eval_factory.h"
#include "jobs/eval_stage.h"
#include "jobs/watch/checkpoint_watch_stage.h"

namespace ferry {

CopySpec copy_spec(const nlohmann::json& inputs, StageEnv& env, const AttemptId& id) {
  CopySpec spec;
  spec.from_host = inputs.value("from_host", std::string());
  spec.from_path = inputs.value("from", std::string());
  spec.to_host = inputs.value("to_host", std::string());
  spec.to_path = inputs.value("to", std::string());
  std::string keep = inputs.value("keep_local", std::string());
  spec.keep_local = keep.empty() ? "" : env.local_path(keep);
  spec.route = inputs.value("route", std::string("auto"));
  spec.streams = inputs.value("streams", 4);
  spec.from_ssh = inputs.value("from_transport", std::string()) == "ssh";
  spec.to_ssh = inputs.value("to_transport", std::string()) == "ssh";
  spec.to_address = inputs.value("to_address", std::string());
  spec.to_port = inputs.value("to_port", 22);
  spec.to_user = inputs.value("to_user", std::string());
  spec.give_up_s = inputs.value("to_give_up_s", 600.0);
  spec.attempt = id;
  return spec;
}

nlohmann::json eval_engine_spec(const nlohmann::json& inputs) {
  nlohmann::json spec = {{"max_new_tokens", inputs.value("max_new_tokens", 128)},
                         {"block_size", inputs.value("block_size", 0)},
                         {"device", inputs.value("device", std::string("cpu"))},
                         {"dtype", inputs.value("dtype", std::string("auto"))},
                         {"threads", inputs.value("threads", 0)},
                         {"prompt_format", inputs.value("prompt_format", std::string("chat"))}};
  for (const char* key : {"min_tau", "min_ratio_to_reference"}) {
    if (inputs.contains(key)) spec[key] = inputs[key];
  }
  return spec;
}

std::shared_ptr<StageRunner> make_stage_runner(const workflow::Stage& stage, const nlohmann::json& inputs,
                                               StageEnv& env, const AttemptId& id) {
  if (stage.kind == workflow::StageKind::kCopy) return std::make_shared<CopyStage>(env, copy_spec(inputs, env, id));
  if (inputs.contains("watch")) return std::make_shared<CheckpointWatchStage>(env, inputs, id);
  nlohmann::json spec = eval_engine_spec(inputs);
  const std::string host = inputs.value("host", std::string());
  if (!host.empty()) return make_remote_eval_stage(host, inputs, std::move(spec), env, id);
  // In the coordinator: paths on the coordinator, relative to the workflow file like keep_local.
  for (const char* key : {"target", "drafter", "reference", "prompts", "tokenizer"}) {
    std::string v = inputs.value(key, std::string());
    spec[key] = v.empty() ? "" : env.local_path(v);
  }
  return std::make_shared<EvalStage>(env, spec);
}

}  // namespace ferry
