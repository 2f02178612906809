// EvalCapabilityCheck: can this host run evals (issue 17)? For `ferry hosts
// check`: sends the eval worker to the host exactly as an eval stage would
// (jobs/eval/stage/remote/host_file_upload.h, by hash, nothing sent when it is there;
// or takes the one the host's env names in $FERRY_EVAL_WORKER),
// runs `ferry-eval check` there as a short detached job under the host's env, and
// reads its answer: libtorch's version, the CPU's vector ISA and whether it has
// BF16, cores, CUDA devices. When the host's dynamic loader cannot link libtorch
// the worker never reaches main; the loader's words become the reason and the fix.
//
// io thread of the caller's io_context; keeps itself alive while it works.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "orchestrator/hosts/host_connection.h"

namespace ferry {

class CommandStage;
class HostFileUpload;
class StageEnv;

class EvalCapabilityCheck : public std::enable_shared_from_this<EvalCapabilityCheck> {
 public:
  /// `env`: the host's env as a run gives it to jobs (LD_LIBRARY_PATH may name libtorch).
  EvalCapabilityCheck(boost::asio::io_context& io, std::shared_ptr<HostConnection> conn, std::string host,
                      std::map<std::string, std::string> env);
  ~EvalCapabilityCheck();
  /// `done({can_run, why, fix, libtorch, cpu_flags, bf16, cores, cuda_devices})`, once.
  void start(std::function<void(nlohmann::json)> done);

 private:
  class Env;
  void run_check(const std::string& worker_dest);
  void finish(nlohmann::json result);

  boost::asio::io_context& io_;
  std::shared_ptr<HostConnection> conn_;
  std::string host_;
  std::map<std::string, std::string> env_vars_;
  std::unique_ptr<Env> env_;
  std::shared_ptr<HostFileUpload> upload_;
  std::shared_ptr<CommandStage> job_;
  std::string log_;
  std::function<void(nlohmann::json)> done_;
};

}  // namespace ferry
