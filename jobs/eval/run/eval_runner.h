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
#include <string>

#include "base/status.h"
#include "jobs/eval/run/eval_report.h"
#include "jobs/eval/run/eval_spec.h"

namespace ferry::eval {

/// One progress line (loading, each response done, ...). Called on the eval's thread.
using ProgressFn = std::function<void(const std::string& line)>;

/// progress and cancel may be null. A failed gate is a successful Result whose report
/// has gate_passed == false.
ferry::Result<EvalReport> run_eval(const EvalSpec& spec, const ProgressFn& progress, const std::atomic<bool>* cancel);

}  // namespace ferry::eval
