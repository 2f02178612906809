// decode_reps: the eval benchmarks' repeated speculative decode (eval_bench,
// eval_growth_bench), each deriving its own figures from the results. A failed decode
// ends the benchmark: figures from the runs that did not fail would mislead.
// Header-only; the caller's thread.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "jobs/eval/run/speculative_decoder.h"

namespace ferry::eval::bench {

/// `reps` decodes of `prompt` with `options`, in order.
inline std::vector<DecodeResult> decode_reps(TargetModel* target, Drafter* drafter, const std::vector<int64_t>& prompt,
                                             const DecodeOptions& options, int reps) {
  std::vector<DecodeResult> results;
  for (int i = 0; i < reps; ++i) {
    auto r = speculative_decode(target, drafter, prompt, options);
    if (!r.ok()) {
      std::fprintf(stderr, "decode failed: %s\n", r.status().message().c_str());
      std::exit(1);
    }
    results.push_back(std::move(*r));
  }
  return results;
}

}  // namespace ferry::eval::bench
