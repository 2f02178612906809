#include "orchestrator/hosts/eval_capability.h"

#include <unistd.h>

#include <random>
#include <sstream>

#include "base/capped_log.h"
#include "base/peer_json.h"
#include "base/shell_quote.h"
#include "jobs/command/command_stage.h"
#include "jobs/eval/stage/remote/host_file_upload.h"
#include "jobs/eval/stage/remote/remote_eval_stage.h"

namespace ferry {
namespace {

constexpr double kCheckTimeoutS = 60;  // loading libtorch on a cold, slow disk takes seconds

std::string fresh_job_name() {
  std::random_device rd;
  std::ostringstream s;
  s << "hosts-check.eval-" << std::hex << rd() << rd();
  return s.str();
}

}  // namespace

// A StageEnv over one host connection, for the upload and the check's job: no
// store, no events; the job's log is kept in memory.
class EvalCapabilityCheck::Env : public StageEnv {
 public:
  Env(EvalCapabilityCheck& check) : c_(check) {}
  boost::asio::io_context& io() override { return c_.io_; }
  void call_agent(const std::string&, const std::string& op, nlohmann::json args, ReplyFn fn) override {
    c_.conn_->call(op, std::move(args), std::move(fn));
  }
  void call_agent_lane(const std::string&, int, const std::string& op, nlohmann::json args, std::string body,
                       ReplyFn fn) override {
    c_.conn_->call(op, std::move(args), std::move(fn), std::move(body));
  }
  std::string local_path(const std::string& path) override { return path; }
  void record_event(const std::string&, nlohmann::json) override {}
  Status append_log(const std::string& bytes) override {
    c_.log_ += bytes;
    log_size_ += static_cast<int64_t>(bytes.size());
    return Status();
  }
  Status skip_log(int64_t n) override {
    c_.log_ += dropped_marker(n);
    log_size_ += n;
    return Status();
  }
  int64_t log_size() override { return log_size_; }
  void set_disconnected(int64_t) override {}
  void note(const std::string&) override {}
  void set_progress(nlohmann::json) override {}

 private:
  EvalCapabilityCheck& c_;
  int64_t log_size_ = 0;  // the job's offsets: bytes dropped count too
};

EvalCapabilityCheck::EvalCapabilityCheck(boost::asio::io_context& io, std::shared_ptr<HostConnection> conn,
                                         std::string host, std::map<std::string, std::string> env)
    : io_(io), conn_(std::move(conn)), host_(std::move(host)), env_vars_(std::move(env)) {
  env_ = std::make_unique<Env>(*this);
}

EvalCapabilityCheck::~EvalCapabilityCheck() = default;

void EvalCapabilityCheck::start(std::function<void(nlohmann::json)> done) {
  done_ = std::move(done);
  auto installed = env_vars_.find(kInstalledWorkerVar);
  if (installed != env_vars_.end() && !installed->second.empty()) return run_check(installed->second);
  std::string worker = local_eval_worker_path();
  if (::access(worker.c_str(), X_OK) != 0) {
    return finish({{"can_run", false},
                   {"why", "this ferry has no eval worker to send (" + worker + " is missing)"},
                   {"fix", "build ferry with FERRY_WITH_TORCH=ON, or set FERRY_SEND_EVAL_WORKER"}});
  }
  auto hash = HostFileUpload::file_hash(worker);
  if (!hash.ok()) return finish({{"can_run", false}, {"why", hash.status().message()}});
  std::string dest = ".ferry/eval-worker/" + *hash + "/ferry-eval";
  upload_ = std::make_shared<HostFileUpload>(*env_, HostFile{worker, host_, dest, 0755});
  auto self = shared_from_this();
  upload_->start([self, dest](Status s, int64_t) {
    if (!s.ok()) return self->finish({{"can_run", false}, {"why", s.message()}});
    self->run_check(dest);
  });
}

void EvalCapabilityCheck::run_check(const std::string& worker_dest) {
  CommandStageSpec check;
  check.command = "exec " + shell_quote(worker_dest[0] == '/' ? worker_dest : "./" + worker_dest) + " check";
  check.env = env_vars_;
  check.timeout_s = kCheckTimeoutS;
  const std::string job = fresh_job_name();
  job_ = std::make_shared<CommandStage>(*env_, CommandSpec{host_, AttemptId{job, 1, job}, std::move(check)});
  auto self = shared_from_this();
  job_->start([self](StageOutcome o) {
    // The answer is the job's one JSON line; anything else is the loader's or the worker's error.
    std::istringstream lines(self->log_);
    std::string line, last;
    while (std::getline(lines, line)) {
      auto j = parse_peer_json(line, "the eval worker's check");  // a host's line: bounded depth
      if (j.ok() && j->is_object() && j->contains("libtorch") && o.exit_code == 0) {
        (*j)["can_run"] = true;
        return self->finish(std::move(*j));
      }
      if (!line.empty()) last = line;
    }
    nlohmann::json r = {{"can_run", false}};
    if (last.find("error while loading shared libraries") != std::string::npos) {
      r["why"] = "the eval worker does not start: " + last;
      r["fix"] = std::string("install libtorch ") + kEvalLibtorchVersion + " (Debian 12: apt-get install libtorch" +
                 kEvalLibtorchVersion + "), or set LD_LIBRARY_PATH in the host's env to where it is";
    } else {
      r["why"] = "the eval worker's check failed (" + (o.error.empty() ? "no answer" : o.error) +
                 (last.empty() ? "" : ": " + last) + ")";
    }
    self->finish(r);
  });
}

void EvalCapabilityCheck::finish(nlohmann::json result) {
  if (!done_) return;
  auto done = std::move(done_);
  done_ = nullptr;
  done(std::move(result));
}

}  // namespace ferry
