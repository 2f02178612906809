// The eval worker: `ferry-eval worker`, the engine run as a detached job on the
// host that holds the model (jobs/eval/stage/remote/remote_eval_stage.h starts it).
//
// It takes the same spec JSON as the plugin (jobs/eval/run/eval_plugin_api.h) from
// $FERRY_EVAL_SPEC, plus "result": where to write the plugin's result JSON
// (temp + rename, so the file is absent or complete). Progress lines go to
// stderr prefixed with kEvalProgressPrefix (jobs/eval/run/eval_progress.h), the readable report to stdout, both
// into the job's log. SIGTERM/SIGINT raise the engine's cancel flag.
// Exit codes: 0 done and the gate passed, 1 gate failed, 2 error (the result
// file then holds {"ok": false, "error": ...} when it could be written).
//
// `ferry-eval check` prints what this host offers an eval as one JSON line:
// {libtorch, cuda_devices, cpu_flags, bf16 (the kernels run here), cores}; reaching main at all means
// the dynamic loader found libtorch.
#pragma once

namespace ferry::eval {

int eval_worker_main();
int eval_check_main();

}  // namespace ferry::eval
