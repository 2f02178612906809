// EvalPlugin: finds and loads libferry-eval.so on demand (see eval_plugin_api.h
// for why the engine is a plugin). Loaded once per process; any thread after that.
#pragma once

#include "base/status.h"
#include "jobs/eval/run/eval_plugin_api.h"

namespace ferry {

struct EvalPlugin {
  decltype(&ferry_eval_run) run = nullptr;
  decltype(&ferry_eval_main) main = nullptr;
  decltype(&ferry_eval_free) free = nullptr;
};

/// $FERRY_EVAL_PLUGIN, else libferry-eval.so beside the running executable.
Result<const EvalPlugin*> load_eval_plugin();

}  // namespace ferry
