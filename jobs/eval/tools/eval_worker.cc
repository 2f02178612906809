#include "jobs/eval/tools/eval_worker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/version.h>

#include "jobs/eval/cpu/cpu_features.h"
#include "jobs/eval/run/eval_plugin_api.h"
#include "jobs/eval/run/eval_progress.h"

namespace ferry::eval {
namespace {

void make_parent_dirs(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    ::mkdir(path.substr(0, slash).c_str(), 0755);  // EEXIST is fine; open reports the rest
  }
}

// Temp + rename: a reader finds the result absent or whole, never half-written.
// The temp name is unpredictable and created afresh (never through a symlink or
// into a file another user planted), and the result, which holds prompts and
// responses, is the user's only (review N7).
bool write_atomically(const std::string& path, const std::string& text) {
  make_parent_dirs(path);
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".tmp.%d.%08x", static_cast<int>(::getpid()), std::random_device()());
  std::string tmp = path + suffix;
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += static_cast<size_t>(n);
  }
  bool ok = ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  ok = ok && std::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

nlohmann::json capability() {
  // The kernels' own reading (cpu/cpu_features.h): "bf16" is what they will run on.
  nlohmann::json isa = isa_flags();
  const bool bf16 = bf16_kernel_supported();
  return {{"libtorch", TORCH_VERSION},
          {"cuda_devices", torch::cuda::device_count()},
          {"cpu_flags", isa},
          {"bf16", bf16},
          {"cores", static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN))},
          {"threads", at::get_num_threads()}};
}

}  // namespace

int eval_check_main() {
  std::cout << capability().dump() << "\n";
  return 0;
}

int eval_worker_main() {
  const char* spec_env = std::getenv("FERRY_EVAL_SPEC");
  auto spec = nlohmann::json::parse(spec_env ? spec_env : "", nullptr, false);
  if (spec.is_discarded() || !spec.is_object() || !spec.contains("result")) {
    std::cerr << "ferry-eval worker: $FERRY_EVAL_SPEC is not an eval spec with a 'result' path\n";
    return 2;
  }
  const std::string result_path = spec["result"].get<std::string>();
  nlohmann::json cap = capability();
  std::string isa;
  for (const auto& f : cap["cpu_flags"]) isa += " " + f.get<std::string>();
  std::cerr << kEvalProgressPrefix << "worker: libtorch " << cap["libtorch"].get<std::string>() << ", "
            << cap["cores"].get<int>() << " cores, CPU" << (isa.empty() ? " (no AVX2)" : isa)
            << (cap["bf16"].get<bool>() ? " (BF16 in hardware)" : " (no BF16 in hardware)") << ", "
            << cap["cuda_devices"].get<int>() << " CUDA device(s)" << std::endl;

  // Signals become the engine's cancel flag, checked between decoding steps.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::atomic<bool> cancel{false};
  std::thread([set, &cancel] {
    int sig = 0;
    if (sigwait(&set, &sig) == 0) cancel.store(true);
  }).detach();

  std::string spec_text = spec.dump();
  char* out = ferry_eval_run(
      spec_text.c_str(),
      [](const char* line, void*) { std::cerr << kEvalProgressPrefix << line << std::endl; }, nullptr, &cancel);
  std::string result = out ? out : R"({"ok":false,"error":"the eval engine returned nothing"})";
  if (out) ferry_eval_free(out);
  if (!write_atomically(result_path, result)) {
    std::cerr << "ferry-eval worker: cannot write " << result_path << ": " << std::strerror(errno) << "\n";
    return 2;
  }
  auto r = nlohmann::json::parse(result, nullptr, false);
  if (r.is_discarded() || !r.value("ok", false)) {
    std::cerr << "ferry-eval worker: " << (r.is_discarded() ? "bad result" : r.value("error", std::string())) << "\n";
    return cancel.load() ? 130 : 2;
  }
  std::cout << r.value("text", std::string()) << std::endl;
  // A result without a boolean verdict is no pass (the coordinator reads it so too).
  const auto verdict = r.find("gate_passed");
  return verdict != r.end() && verdict->is_boolean() && verdict->get<bool>() ? 0 : 1;
}

}  // namespace ferry::eval
