// EvalReport: everything one eval measured — τ and acceptance statistics per drafter,
// the B = 1 baseline, speedup, time split between the models' forward passes and the
// loop itself, what loading found, the drafter-vs-reference diff, and the gate verdict.
// Renders as JSON, as a readable text report, and as a flat metric map for the state
// store. Plain value, no libtorch; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jobs/eval/io/load_report.h"
#include "jobs/eval/run/drafter_diff.h"
#include "jobs/eval/run/eval_datasets.h"
#include "jobs/eval/run/response_text.h"
#include "jobs/eval/run/tau_spread.h"
#include "jobs/eval/run/token_sampler.h"

namespace ferry::eval {

/// One decoding configuration (a drafter, or the baseline) over all prompts.
struct DecodeRun {
  std::string label;  // "candidate", "reference", "baseline"
  std::string path;   // drafter folder; "" for the baseline
  int64_t block_size = 1;
  int64_t responses = 0;
  double tau = 0;                     // mean over responses of per-response mean acceptance length
  std::vector<double> response_taus;  // one per prompt
  /// One per prompt: decode seconds per output token, -1 for a response without tokens
  /// (a dataset's speedup is computed from its rows, eval_datasets.h).
  std::vector<double> response_tpots;
  std::vector<int64_t> acceptance_histogram;  // [block_size + 1]: steps per acceptance length value
  std::vector<double> acceptance_rate;        // [block_size]: share of steps whose slot j was accepted ([0] = 1)
  std::vector<int64_t> accepted_at;           // [block_size]: steps whose slot j was accepted (the rate's counts)
  int64_t steps = 0;
  int64_t target_forwards = 0;
  int64_t draft_forwards = 0;
  int64_t generated_tokens = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;
  double target_seconds = 0;
  double draft_seconds = 0;
  double overhead_seconds = 0;   // decode - target - draft: the loop's own cost
  double tokens_per_second = 0;  // generated tokens / decode seconds
  double mean_tpot = 0;          // mean over responses of decode seconds per output token
  double tpot_sum = 0;           // its sum and count (responses with tokens), so shards merge exactly
  int64_t tpot_count = 0;
  /// Responses whose tokens differ from the baseline's (-1: no baseline run).
  int64_t responses_differing_from_baseline = -1;
  /// Draft tokens proposed (steps × (block − 1), as vLLM and llama.cpp count them) and
  /// accepted (the accepted slots' counts), and accepted / drafted; 0 at block 1.
  int64_t drafted_tokens = 0;
  int64_t accepted_tokens = 0;
  double overall_acceptance_rate = 0;  // JSON "overall_acceptance_rate"; metrics "acceptance_rate"
  TauSpread tau_spread;                // of response_taus (tau_spread.h states the method)
  /// The process's CPU time during this run's timed passes, their wall time × the
  /// eval's threads, and the CPU other processes took past the cores the eval left free
  /// (cpu_contention.h); cpu_contention = the last over the second (0: none, or not
  /// measured). From kContendedShare the report warns that the speedup is unreliable.
  double cpu_seconds = 0;
  double cpu_capacity_seconds = 0;
  double contending_cpu_seconds = 0;
  double cpu_contention = 0;

  nlohmann::json to_json() const;
};

/// The figures of a run computed from its per-response rows and counts (response_taus,
/// accepted_at, steps, the seconds, tpot_sum/count, the CPU seconds): τ and its spread,
/// the acceptance rates and token counts, the loop overhead, tokens/s, mean TPOT, the CPU
/// share. One place, so a merged run is computed as a whole one.
void finish_decode_run(DecodeRun* run);

/// Which part of the prompt set a report covers: shard `index` of `count` decodes the
/// prompts [first_prompt, first_prompt + prompt_count) of the file's prompt_total.
struct ShardOf {
  int index = 0;
  int count = 1;  // 1: the whole set
  int64_t first_prompt = 0;
  int64_t prompt_total = 0;

  /// The contiguous slice of `total` prompts that shard `index` of `count` decodes.
  static ShardOf slice(int index, int count, int64_t total);
};

/// One shard of a merged report: where it ran and what it took.
struct ShardRow {
  std::string stage;  // the shard's stage (or "" outside a workflow)
  std::string host;   // the ferry host it ran on ("" = not said)
  int64_t first_prompt = 0;
  int64_t prompts = 0;
  double wall_seconds = 0;
  int threads = 0;
  int cores = 0;
};

/// What one input of the eval held when the engine read it, by content: the merge of
/// a sharded eval refuses shards whose inputs differ under the same paths.
struct InputFingerprint {
  std::string what;  // "target", "drafter", "reference", "tokenizer", "prompts", "dataset NAME"
  /// A folder's model_fingerprint (io/model_fingerprint.h says what it covers and what
  /// not); a prompts file's prompts_fingerprint (prompt_file.h: every prompt's line and
  /// token ids, the whole file's, not just a shard's part).
  std::string digest;
  /// A folder ferry copied: the copy's manifest hash from its .ferry-complete (every
  /// byte of every file); "" = none.
  std::string copy_manifest;
};

struct EvalReport {
  std::string host;  // the ferry host the eval ran on (EvalSpec::host); "" = not said, or a merged report
  std::string target;
  std::string target_architecture;  // e.g. "qwen3_5: 48 linear + 16 full attention"
  std::string drafter;
  std::string reference;
  std::string prompts;
  std::string prompt_format;
  std::string tokenizer;         // tokenizer.json used; "" = none (byte-level text)
  int64_t prompt_count = 0;      // decoded here (a shard: its part)
  ShardOf shard;                 // a shard's report: which part; a merged one has count 1
  std::vector<ShardRow> shards;  // a merged report: its shards, in prompt order
  /// Named prompt files decoded in this eval, in order (eval_datasets.h); empty for one file.
  std::vector<DatasetRow> datasets;
  int64_t max_new_tokens = 0;
  int64_t block_size = 0;
  std::string device;
  std::string dtype;         // what ran: float32 | bfloat16 | float16
  std::string dtype_source;  // "checkpoint BF16" (followed) or "--dtype"
  int threads = 0;           // intra-op threads in effect
  int cores = 0;             // CPUs the process may use
  std::string blas;          // the BLAS libtorch's float32 matmuls call, by name
  std::string blas_library;  // its real path
  std::string blas_threading;
  bool blas_reference = false;  // the slow netlib BLAS (also a warning)
  std::string isa;              // CPU vector extensions
  /// Greedy, or the target's temperature and seed (token_sampler.h).
  Sampling sampling;

  std::vector<LoadReport> loads;
  /// The target, drafters, tokenizer and prompts by content, in that order; empty in a
  /// report of a ferry-eval older than them (the merge refuses such a shard).
  std::vector<InputFingerprint> fingerprints;
  DecodeRun candidate;
  std::optional<DecodeRun> reference_run;
  std::optional<DecodeRun> baseline;
  double speedup = 0;  // mean TPOT baseline / mean TPOT candidate; 0 without baseline
  double reference_speedup = 0;
  std::optional<double> ratio_to_reference;  // tau(candidate) / tau(reference)
  std::optional<DrafterDiff> diff;
  std::vector<std::string> warnings;
  double wall_seconds = 0;
  /// Target forward passes this eval ran itself, every run's; a reused run's are not counted.
  int64_t target_forwards_run = 0;
  /// The reference and baseline runs' store (EvalSpec::baseline_store, baseline_store.h):
  /// the key they are kept under ("" = no store asked), and whether this eval took them
  /// from it, as the eval of the drafter `baseline_computed_by` decoded and timed them
  /// (the speedup is against that timing), or decoded and stored them itself.
  std::string baseline_key;
  bool baseline_reused = false;
  std::string baseline_computed_by;
  std::vector<ResponseText> responses;  // the candidate's, decoded
  int show_responses = 0;               // how many to_text prints in full

  bool gate_passed = false;  // the runner sets it; a report nobody judged has not passed
  std::string gate_message;
  /// Not empty: no verdict here, the gate is judged elsewhere, as these words say
  /// (EvalSpec::gate_deferred); gate_passed is then true and means nothing.
  std::string gate_deferred;

  nlohmann::json to_json() const;
  std::string to_text() const;
  /// Flat: "tau", "reference_tau", "ratio_to_reference", "speedup", "tokens_per_second", ...
  std::map<std::string, double> metrics() const;
};

/// The engine's result for a finished eval, as jobs/eval/run/eval_plugin_api.h gives it:
/// {ok: true, report, text, metrics, gate_passed, gate_message}.
nlohmann::json eval_result_json(const EvalReport& report);

/// speedup, reference_speedup and ratio_to_reference from the finished runs.
void compare_runs(EvalReport* report);

}  // namespace ferry::eval
