#include "jobs/eval/run/eval_spec.h"

#include "jobs/eval/run/json_fields.h"

namespace ferry::eval {

nlohmann::json eval_spec_json(const EvalSpec& s) {
  nlohmann::json j = {{"target", s.target},
                      {"drafter", s.drafter},
                      {"reference", s.reference},
                      {"prompts", s.prompts},
                      {"tokenizer", s.tokenizer},
                      {"prompt_format", s.prompt_format},
                      {"show_responses", s.show_responses},
                      {"max_new_tokens", s.max_new_tokens},
                      {"block_size", s.block_size},
                      {"device", s.device},
                      {"dtype", s.dtype},
                      {"threads", s.threads},
                      {"baseline", s.baseline}};
  if (s.min_tau) j["min_tau"] = *s.min_tau;
  if (s.min_ratio_to_reference) j["min_ratio_to_reference"] = *s.min_ratio_to_reference;
  if (s.shard_count > 1) {  // an unsharded eval's JSON is what it was before shards
    j["shard_index"] = s.shard_index;
    j["shard_count"] = s.shard_count;
    j["shards_on_host"] = s.shards_on_host;
  }
  return j;
}

Result<EvalSpec> eval_spec_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_argument("the eval spec is " + json_type_phrase(j) + ", not an object");
  EvalSpec s;
  std::string error;
  JsonFields f(j, "", &error);
  for (auto [key, field] : {std::pair{"target", &s.target},
                            {"drafter", &s.drafter},
                            {"reference", &s.reference},
                            {"prompts", &s.prompts},
                            {"tokenizer", &s.tokenizer},
                            {"prompt_format", &s.prompt_format},
                            {"device", &s.device},
                            {"dtype", &s.dtype}}) {
    f.str(key, field);
  }
  for (auto [key, field] : {std::pair{"show_responses", &s.show_responses},
                            {"max_new_tokens", &s.max_new_tokens},
                            {"block_size", &s.block_size},
                            {"threads", &s.threads},
                            {"shard_index", &s.shard_index},
                            {"shard_count", &s.shard_count},
                            {"shards_on_host", &s.shards_on_host}}) {
    f.integer(key, field);
  }
  f.boolean("baseline", &s.baseline);
  f.optional_num("min_tau", &s.min_tau);
  f.optional_num("min_ratio_to_reference", &s.min_ratio_to_reference);
  if (!error.empty()) return invalid_argument("the eval spec's " + error);
  if (s.shard_count < 1 || s.shard_index < 0 || s.shard_index >= s.shard_count || s.shards_on_host < 1) {
    return invalid_argument("the eval spec's shard " + std::to_string(s.shard_index) + " of " +
                            std::to_string(s.shard_count) + " (" + std::to_string(s.shards_on_host) +
                            " on its host) does not exist");
  }
  return s;
}

}  // namespace ferry::eval
