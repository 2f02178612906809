// The C boundary of the eval engine plugin (libferry-eval.so).
//
// jobs/eval/ links libtorch; `ferry` does not, so that `ferry status` and the
// other views start in milliseconds instead of loading libtorch's hundreds of
// MiB of shared libraries. The coordinator dlopens the plugin only when an eval
// stage or `ferry eval` runs (eval_plugin.h). Both sides are built from this tree
// together; kEvalPluginAbi guards against a stale plugin.
#pragma once

extern "C" {

#define FERRY_EVAL_PLUGIN_ABI 1

typedef void (*ferry_eval_progress_fn)(const char* line, void* context);

/// Runs one eval. `spec_json`: an EvalSpec as eval_spec_json writes it (its keys are
/// listed once, in eval_spec.cc's eval_spec_fields).
/// `cancel` points at a std::atomic<bool> (or is null). Returns a malloc'd JSON
/// string, {"ok":true, "report":{...}, "text":"...", "metrics":{...},
/// "gate_passed":bool, "gate_message":"..."} or {"ok":false, "error":"..."};
/// free it with ferry_eval_free. Never throws.
char* ferry_eval_run(const char* spec_json, ferry_eval_progress_fn progress, void* context, const void* cancel);
/// `ferry eval ...` (argv[0] == "eval"); returns the exit code.
int ferry_eval_main(int argc, char** argv);
void ferry_eval_free(char* p);
int ferry_eval_abi(void);
}
