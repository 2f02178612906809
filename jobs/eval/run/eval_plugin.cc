// libferry-eval.so: the eval engine behind the C boundary of jobs/eval/run/eval_plugin_api.h.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "jobs/eval/run/eval_command.h"
#include "jobs/eval/run/eval_plugin_api.h"
#include "jobs/eval/run/eval_runner.h"

namespace {

char* dup_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

char* error_json(const std::string& message) {
  return dup_string(nlohmann::json{{"ok", false}, {"error", message}}.dump());
}

}  // namespace

extern "C" {

int ferry_eval_abi(void) { return FERRY_EVAL_PLUGIN_ABI; }

void ferry_eval_free(char* p) { std::free(p); }

int ferry_eval_main(int argc, char** argv) { return ferry::eval::eval_command_main(argc, argv); }

char* ferry_eval_run(const char* spec_json, ferry_eval_progress_fn progress, void* context, const void* cancel) {
  try {
    auto j = nlohmann::json::parse(spec_json ? spec_json : "", nullptr, false);
    if (j.is_discarded() || !j.is_object()) return error_json("eval spec is not a JSON object");
    auto spec = ferry::eval::eval_spec_from_json(j);
    if (!spec.ok()) return error_json(spec.status().message());
    ferry::eval::ProgressFn fn;
    if (progress) fn = [progress, context](const std::string& line) { progress(line.c_str(), context); };
    auto r = ferry::eval::run_eval(*spec, fn, static_cast<const std::atomic<bool>*>(cancel));
    if (!r.ok()) return error_json(r.status().message());
    return dup_string(ferry::eval::eval_result_json(*r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } catch (const std::exception& e) {
    return error_json(std::string("eval engine: ") + e.what());
  }
}

}  // extern "C"
