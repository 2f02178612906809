// run_eval: the drafter eval as one call — load the Qwen3 target, the DFlash drafter
// (and optionally a reference drafter), run speculative decoding over the prompts, the
// same prompts with B = 1 for the speedup figure, and apply the gate.
//
// This is the public face of jobs/eval for the rest of ferry: no libtorch in this header.
// run_eval never throws (libtorch errors become a Status naming the file or tensor),
// may run on any worker thread (one eval per thread; note that `threads` sets
// libtorch's process-wide intra-op pool size), and checks `cancel` between steps.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "base/status.h"
#include "jobs/eval/run/eval_report.h"

namespace ferry::eval {

struct EvalSpec {
  std::string target;      // folder: config.json + model.safetensors or sharded index
  std::string drafter;     // folder
  std::string reference;   // optional folder ("" = none)
  std::string prompts;     // JSONL file (jobs/eval/run/prompt_file.h): input_ids, text, prompt, messages, turns
  std::string tokenizer;   // folder with tokenizer.json; "" = the target folder's, if any
  std::string prompt_format = "chat";  // raw | chat | chat-no-think (jobs/tokenizer/chat_format.h)
  int show_responses = 3;  // text report: responses printed in full, draft spans marked
  int max_new_tokens = 128;
  int block_size = 0;      // 0 = from the drafter config
  std::string device = "cpu";   // "cuda" when libtorch has it, else clear error
  /// auto = the target checkpoint's (BF16 stays BF16, used in place; F32 stays F32; F16
  /// computes in float32 on CPU) | float32 | bfloat16 | float16 (weights converted on load)
  std::string dtype = "auto";
  int threads = 0;         // 0 = every CPU this process may use; else libtorch's intra-op threads
  std::optional<double> min_tau;                 // gate
  std::optional<double> min_ratio_to_reference;  // gate: tau(candidate)/tau(reference)
  bool baseline = true;    // also run B=1 plain decoding for the speedup figure
  /// Decode only shard `shard_index` of `shard_count`: a contiguous part of the prompts
  /// (EvalReport::shard says which); merge_shard_reports joins the parts exactly.
  int shard_index = 0;
  int shard_count = 1;
  /// With threads 0: shards of one eval on this host, which share its cores evenly.
  int shards_on_host = 1;
};

/// One progress line (loading, each response done, ...). Called on the eval's thread.
using ProgressFn = std::function<void(const std::string& line)>;

/// progress and cancel may be null. A failed gate is a successful Result whose report
/// has gate_passed == false.
ferry::Result<EvalReport> run_eval(const EvalSpec& spec, const ProgressFn& progress, const std::atomic<bool>* cancel);

}  // namespace ferry::eval
