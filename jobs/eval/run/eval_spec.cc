#include "jobs/eval/run/eval_spec.h"

#include <cmath>

#include "base/json_field_writer.h"
#include "base/json_fields.h"

namespace ferry::eval {
namespace {

// Both sides of the JSON (json_field_writer.h).
constexpr auto eval_spec_fields = [](auto& v, auto& s) {
  v("target", s.target);
  v("drafter", s.drafter);
  v("reference", s.reference);
  v("prompts", s.prompts);
  if (kReads<decltype(v)> || !s.datasets.empty()) {  // one file: the JSON it was before datasets
    v.objects("datasets", s.datasets, [](auto& d, auto& x) {
      d("name", x.name);
      d("prompts", x.prompts);
    });
  }
  v("tokenizer", s.tokenizer);
  v("prompt_format", s.prompt_format);
  v("show_responses", s.show_responses);
  v("max_new_tokens", s.max_new_tokens);
  v("block_size", s.block_size);
  v("device", s.device);
  v("dtype", s.dtype);
  v("threads", s.threads);
  v("baseline", s.baseline);
  if (kReads<decltype(v)> || s.temperature > 0) {  // a greedy eval's JSON is what it was before sampling
    v("temperature", s.temperature);
    v("seed", s.seed);
  }
  v("min_tau", s.min_tau);
  v("min_ratio_to_reference", s.min_ratio_to_reference);
  if (kReads<decltype(v)> || !s.gate_deferred.empty()) v("gate_deferred", s.gate_deferred);
  if (kReads<decltype(v)> || !s.baseline_store.empty()) v("baseline_store", s.baseline_store);
  if (kReads<decltype(v)> || s.shard_count > 1) {  // an unsharded eval's JSON is what it was before shards
    v("shard_index", s.shard_index);
    v("shard_count", s.shard_count);
    v("shards_on_host", s.shards_on_host);
  }
  if (kReads<decltype(v)> || !s.host.empty()) v("host", s.host);
};

}  // namespace

nlohmann::json eval_spec_json(const EvalSpec& s) { return fields_json(s, eval_spec_fields); }

Result<EvalSpec> eval_spec_from_json(const nlohmann::json& j) {
  auto read = fields_from_json<EvalSpec>(j, "the eval spec", eval_spec_fields);
  if (!read.ok()) return read.status();
  const EvalSpec& s = *read;
  if (!std::isfinite(s.temperature) || s.temperature < 0 || s.temperature > kMaxTemperature) {
    return invalid_argument("the eval spec's temperature " + std::to_string(s.temperature) +
                            " is not a number from 0 (greedy) to " + std::to_string(kMaxTemperature));
  }
  if (s.shard_count < 1 || s.shard_index < 0 || s.shard_index >= s.shard_count || s.shards_on_host < 1) {
    return invalid_argument("the eval spec's shard " + std::to_string(s.shard_index) + " of " +
                            std::to_string(s.shard_count) + " (" + std::to_string(s.shards_on_host) +
                            " on its host) does not exist");
  }
  FERRY_RETURN_IF_ERROR(check_datasets(s.datasets, s.prompts).with_context("the eval spec"));
  return read;
}

}  // namespace ferry::eval
