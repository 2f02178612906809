// The speculative decoding loop, as z-lab/dflash's `spec_generate` runs it: prefill,
// then per step draft B-1 tokens, verify the block [bonus, drafts] in one target
// forward, accept the longest prefix the target agrees with plus one bonus token, roll
// the target back (crop: KV caches shrink, recurrent states replay), hand the drafter
// the verified positions' features. One loop for every TargetModel kind. block_size 1
// is plain decoding (no drafter). The target's token after each slot is its argmax
// (greedy), or at temperature > 0 a sample drawn with the uniform of (response,
// generated position) (token_sampler.h), so plain and speculative decoding agree.
// Stops once a stop id is generated or max_new_tokens are reached; the output is cut at
// max_new_tokens and after the first stop id. Runs on the caller's thread; checks
// `cancel` between steps. May throw c10::Error (eval_runner catches).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "jobs/eval/models/drafter.h"
#include "jobs/eval/models/target_model.h"
#include "jobs/eval/run/token_sampler.h"

namespace ferry::eval {

struct DecodeOptions {
  int64_t block_size = 16;
  int64_t max_new_tokens = 128;
  std::vector<int64_t> stop_ids;
  std::vector<int64_t> capture_layers;  // target layers the drafter reads
  Sampling sampling;                    // greedy by default
  uint64_t response_index = 0;          // r of the sampling uniforms: the prompt's 0-based index in its file
  /// Caches off: every step re-runs the target over the whole sequence and the drafter
  /// over the whole context. Same tokens, for benchmarking the caches.
  bool recompute = false;
  const std::atomic<bool>* cancel = nullptr;
};

struct DecodeResult {
  std::vector<int64_t> tokens;              // generated, after the prompt
  std::vector<int64_t> acceptance_lengths;  // per step: accepted drafts + 1
  std::vector<int64_t> accepted_at;         // [block_size]: steps whose slot j was accepted (j >= 1)
  int64_t steps = 0;
  int64_t target_forwards = 0;  // including the prefill
  int64_t draft_forwards = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;  // the step loop, prefill excluded
  double target_seconds = 0;  // target forwards inside the loop
  double draft_seconds = 0;   // draft forwards inside the loop
  /// Mean acceptance length of this response (0 without steps).
  double tau() const;
};

/// drafter may be null only when block_size == 1.
Result<DecodeResult> speculative_decode(TargetModel* target, Drafter* drafter, const std::vector<int64_t>& prompt,
                                        const DecodeOptions& options);

}  // namespace ferry::eval
