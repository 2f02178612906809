// What `ferry validate` and `ferry run` say of an eval stage that asks for a GPU
// (`device: cuda`, or `gpu`) in a ferry whose eval engine was built with a libtorch
// without CUDA: that engine evaluates on CPU only, and such a stage fails as it
// starts. A warning, not an error: a host whose env names its own eval worker
// (FERRY_EVAL_WORKER, perhaps built with CUDA) runs that one instead. Any thread.
#pragma once

#include <string>
#include <vector>

#include "workflows/model.h"

namespace ferry {

/// What this build's eval engine computes on: "cuda", "cpu", or "none" (built without libtorch).
const char* eval_engine_device();

/// One line per eval stage whose `device: cuda` this build's engine cannot honour:
/// "FILE:LINE:COL: warning: ...". Empty in a build with CUDA or with no eval engine.
std::vector<std::string> eval_device_warnings(const workflow::Workflow& wf);

}  // namespace ferry
