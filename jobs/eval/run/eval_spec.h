// EvalSpec: what one eval is asked to do — the checkpoints, the prompts, how to decode,
// the gate, and which shard of the prompts. One type for every place an eval is
// described: the stage that asks for it (jobs/stage_spec.h makes it from the
// workflow), the JSON that crosses to the engine (the plugin's C boundary, the worker
// on a host: eval_plugin_api.h), and the engine that runs it (eval_runner.h). The
// JSON is read typed: a key of the wrong type is an error naming it, never a
// default. Plain value, no libtorch; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "jobs/eval/run/eval_datasets.h"

namespace ferry::eval {

/// The highest sampling temperature an eval takes (past it, sampling is nearly uniform).
inline constexpr double kMaxTemperature = 100;

struct EvalSpec {
  std::string target;     // folder: config.json + model.safetensors or sharded index
  std::string drafter;    // folder
  std::string reference;  // optional folder ("" = none)
  std::string prompts;    // JSONL file (jobs/eval/run/prompt_file.h): input_ids, text, prompt, messages, turns
  /// Named prompt files instead of `prompts` (eval_datasets.h): decoded in this order,
  /// one report row each.
  std::vector<DatasetFile> datasets;
  std::string tokenizer;  // folder with tokenizer.json; "" = the target folder's, if any
  std::string prompt_format = "chat";  // raw | chat | chat-no-think (jobs/tokenizer/chat_format.h)
  int show_responses = 3;              // text report: responses printed in full, draft spans marked
  int max_new_tokens = 128;
  int block_size = 0;          // 0 = from the drafter config
  std::string device = "cpu";  // "cuda" when libtorch has it, else clear error
  /// auto = the target checkpoint's (BF16 stays BF16, used in place; F32 stays F32; F16
  /// computes in float32 on CPU) | float32 | bfloat16 | float16 (weights converted on load)
  std::string dtype = "auto";
  int threads = 0;                               // 0 = every CPU this process may use; else libtorch's intra-op threads
  std::optional<double> min_tau;                 // gate
  std::optional<double> min_ratio_to_reference;  // gate: tau(candidate)/tau(reference)
  bool baseline = true;                          // also run B=1 plain decoding for the speedup figure
  /// 0 = greedy (as before). > 0: the target's token at each position is sampled from
  /// softmax(logits / temperature) with the uniforms of `seed` (token_sampler.h); the
  /// drafter stays greedy, and a draft token is accepted when it equals the target's
  /// sampled one. Written to the JSON only when > 0, so a greedy spec is what it was.
  double temperature = 0;
  uint64_t seed = 0;
  /// Not empty: this eval's gate is judged elsewhere, and its report says so in these
  /// words instead of a verdict (a watch's checkpoints: "judged on the last checkpoint").
  std::string gate_deferred;
  /// Not empty: a folder where this eval keeps the target's plain baseline and the
  /// reference drafter's decode, under a key of what they depend on, and takes them
  /// from when an earlier eval stored them with the same key (a watch's checkpoints:
  /// baseline_store.h). A relative path is the eval's working directory's.
  std::string baseline_store;
  /// Decode only shard `shard_index` of `shard_count`: a contiguous part of the prompts
  /// (EvalReport::shard says which); merge_shard_reports joins the parts exactly.
  int shard_index = 0;
  int shard_count = 1;
  /// With threads 0: shards of one eval on this host, which share its cores evenly.
  int shards_on_host = 1;
  /// The ferry host the eval runs on, as the workflow names it, for its report (the
  /// merge of a sharded eval names a shard's host); "" in the coordinator or `ferry eval`.
  std::string host;
};

/// The spec as the engine's JSON (eval_plugin_api.h), every field written.
nlohmann::json eval_spec_json(const EvalSpec& spec);

/// The spec from that JSON: absent keys keep their defaults; a key of the wrong type
/// (or a shard that does not exist) is an error naming it. Unknown keys ("result",
/// the worker's) are left for their readers.
Result<EvalSpec> eval_spec_from_json(const nlohmann::json& j);

}  // namespace ferry::eval
