#include "jobs/eval/stage/eval_plugin.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "base/file_util.h"

namespace ferry {
namespace {

std::string plugin_path() {
  const char* env = std::getenv("FERRY_EVAL_PLUGIN");
  if (env && *env) return env;
  return companion_path("libferry-eval.so");
}

}  // namespace

Result<const EvalPlugin*> load_eval_plugin() {
  static std::once_flag once;
  static EvalPlugin plugin;
  static Status status;
  std::call_once(once, [] {
    std::string path = plugin_path();
    // libgomp reads OMP_WAIT_POLICY once, when the plugin's libtorch loads it. Its
    // default spins threads after every parallel region, and a decode step runs hundreds
    // of small ones: on a host where anything else runs, spinning threads take the CPUs
    // from the working ones (the tiny-suite eval: 25-37 s spinning, 5-8 s passive, on
    // 2 busy cores). Passive unless the user chose; unset again so stage commands this
    // process starts do not inherit it.
    const bool choose_wait = std::getenv("OMP_WAIT_POLICY") == nullptr;
    if (choose_wait) ::setenv("OMP_WAIT_POLICY", "passive", 0);
    void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (choose_wait) ::unsetenv("OMP_WAIT_POLICY");
    if (!h) {
      const char* err = ::dlerror();
      status = failed_precondition("the eval engine is not available: cannot load " + path + " (" +
                                   (err ? err : "unknown error") +
                                   "); build with FERRY_WITH_TORCH=ON or set FERRY_EVAL_PLUGIN");
      return;
    }
    auto abi = reinterpret_cast<decltype(&ferry_eval_abi)>(::dlsym(h, "ferry_eval_abi"));
    plugin.run = reinterpret_cast<decltype(&ferry_eval_run)>(::dlsym(h, "ferry_eval_run"));
    plugin.main = reinterpret_cast<decltype(&ferry_eval_main)>(::dlsym(h, "ferry_eval_main"));
    plugin.free = reinterpret_cast<decltype(&ferry_eval_free)>(::dlsym(h, "ferry_eval_free"));
    if (!abi || !plugin.run || !plugin.main || !plugin.free) {
      status = failed_precondition(path + " is not a ferry eval plugin");
    } else if (abi() != FERRY_EVAL_PLUGIN_ABI) {
      status = failed_precondition(path + " speaks plugin ABI " + std::to_string(abi()) + ", this ferry speaks " +
                                   std::to_string(FERRY_EVAL_PLUGIN_ABI) + " (rebuild)");
    }
  });
  if (!status.ok()) return status;
  return &plugin;
}

}  // namespace ferry
