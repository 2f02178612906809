#include "orchestrator/eval_device_check.h"

#include <cstring>

namespace ferry {
namespace {

// FERRY_EVAL_ENGINE_DEVICE comes from CMake (jobs/eval/CMakeLists.txt finds out
// whether the libtorch the engine links has CUDA).
#ifndef FERRY_EVAL_ENGINE_DEVICE
#define FERRY_EVAL_ENGINE_DEVICE "none"
#endif

constexpr const char* kOwnWorkerVar = "FERRY_EVAL_WORKER";  // remote_eval_stage.h's kInstalledWorkerVar

// Whether every host the stage evaluates on runs an eval worker of its own.
bool own_worker_everywhere(const workflow::Workflow& wf, const workflow::Stage& s) {
  if (s.env.count(kOwnWorkerVar)) return true;
  std::vector<std::string> hosts = s.hosts;
  if (hosts.empty()) hosts.push_back(s.host);
  for (const auto& name : hosts) {
    const workflow::Host* h = name.empty() ? nullptr : wf.find_host(name);
    if (!h || !h->env.count(kOwnWorkerVar)) return false;  // in the coordinator, or our worker sent
  }
  return true;
}

}  // namespace

const char* eval_engine_device() { return FERRY_EVAL_ENGINE_DEVICE; }

std::vector<std::string> eval_device_warnings(const workflow::Workflow& wf) {
  std::vector<std::string> out;
  if (std::strcmp(eval_engine_device(), "cpu") != 0) return out;
  for (const auto& s : wf.stages) {
    if (s.kind != workflow::StageKind::kEval || s.device != "cuda" || own_worker_everywhere(wf, s)) continue;
    out.push_back(wf.path + ":" + std::to_string(s.at.line) + ":" + std::to_string(s.at.column) + ": warning: stage '" +
                  s.name +
                  "' asks for device: cuda, but this ferry's eval engine was built with a libtorch without CUDA: "
                  "it evaluates on CPU only, and this stage will fail as it starts. Write `device: cpu`, or give "
                  "the host's env " +
                  kOwnWorkerVar + ": an eval worker built with CUDA");
  }
  return out;
}

}  // namespace ferry
