#include "jobs/eval/stage/remote/remote_eval_stage.h"

#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "base/file_hash.h"
#include "base/file_util.h"
#include "base/shell_quote.h"
#include "jobs/agent_call.h"
#include "jobs/command/command_stage.h"
#include "jobs/eval/stage/eval_outcome.h"
#include "jobs/eval/stage/eval_progress_reader.h"
#include "jobs/eval/stage/remote/host_file_upload.h"
#include "jobs/log_tap_env.h"
#include "protocol/ops/fs.h"
#include "protocol/ops/host.h"
#include "transfer/chunk_files.h"
#include "transfer/copy_plan.h"
#include "transfer/host_listing.h"

namespace ferry {
namespace {

constexpr int kLoaderFailedExit = 127;  // sh's "cannot execute", ld.so's missing library

std::string gib_text(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string local_eval_worker_path() {
  const char* env = std::getenv("FERRY_SEND_EVAL_WORKER");
  if (env && *env) return env;
  return companion_path("ferry-eval");
}

RemoteEvalStage::RemoteEvalStage(StageEnv& env, RemoteEvalSpec spec) : env_(env), spec_(std::move(spec)) {
  result_path_ = ".ferry/eval-results/" + spec_.attempt.job + "." + std::to_string(spec_.attempt.attempt) + ".json";
}

RemoteEvalStage::~RemoteEvalStage() = default;

void RemoteEvalStage::start(std::function<void(StageOutcome)> done) {
  done_ = std::move(done);
  install_worker();
}

void RemoteEvalStage::install_worker() {
  // A worker installed on the host (say, one built against that host's own libtorch
  // with CUDA) is named by the host's env and used as it is.
  auto installed = spec_.env.find(kInstalledWorkerVar);
  if (installed != spec_.env.end() && !installed->second.empty()) {
    worker_dest_ = installed->second;
    env_.record_event("eval.worker", {{"host", spec_.host}, {"path", worker_dest_}, {"installed", true}});
    return check_memory();
  }
  if (::access(spec_.worker.c_str(), X_OK) != 0) {
    return fail("this ferry has no eval worker to send to host '" + spec_.host + "' (" + spec_.worker +
                " is missing: build with FERRY_WITH_TORCH=ON, or set FERRY_SEND_EVAL_WORKER)");
  }
  auto hash = HostFileUpload::file_hash(spec_.worker);
  if (!hash.ok()) return fail("eval worker: " + hash.status().message());
  // By hash, like the agent: a host keeps every worker it was sent, and a
  // changed build never runs a stale one.
  worker_dest_ = ".ferry/eval-worker/" + *hash + "/ferry-eval";
  upload_ = std::make_shared<HostFileUpload>(env_, HostFile{spec_.worker, spec_.host, worker_dest_, 0755});
  auto self = shared_from_this();
  upload_->start([self, hash = *hash](Status s, int64_t sent) {
    if (self->finished_) return;
    if (!s.ok()) return self->fail(s.message());
    self->env_.record_event(
        "eval.worker",
        {{"host", self->spec_.host}, {"path", self->worker_dest_}, {"hash", hash}, {"bytes_sent", sent}});
    if (sent > 0)
      self->env_.note("sent the eval worker to " + self->spec_.host + " (" + std::to_string(sent) + " bytes)");
    self->check_memory();
  });
}

// The checkpoints are memory-mapped whole: more bytes than the host has memory can
// never run there, so say so now instead of after minutes of paging. Paths that do
// not list are left to the engine, whose error names the file.
void RemoteEvalStage::check_memory() {
  // On a Slurm host the agent's memory is the login node's: the job's own is
  // Slurm's (slurm.mem), and running past it ends as OUT_OF_MEMORY.
  if (!spec_.slurm.is_null()) return ship_prompts();
  auto self = shared_from_this();
  auto total = std::make_shared<int64_t>(0);
  auto listed = std::make_shared<std::vector<std::string>>();
  auto pending = std::make_shared<int>(1);
  auto host_memory = std::make_shared<int64_t>(0);
  auto one_done = [self, total, listed, pending, host_memory] {
    if (--*pending > 0 || self->finished_) return;
    if (*host_memory > 0 && *total > *host_memory) {
      std::string what;
      for (const auto& l : *listed) what += (what.empty() ? "" : ", ") + l;
      return self->fail("host '" + self->spec_.host + "' has " + gib_text(*host_memory) +
                        " of memory and the eval's checkpoints hold " + gib_text(*total) + " (" + what +
                        "): they cannot fit; evaluate on a host with more memory");
    }
    self->ship_prompts();
  };
  env_.call_agent(
      spec_.host, "host.info", nlohmann::json::object(), [host_memory, one_done](Result<protocol::Frame> r) {
        // A host.info it cannot read leaves the memory unknown: the check is skipped, not the eval.
        auto info = protocol::reply_of<protocol::HostInfoReply>(r);
        if (info.ok()) *host_memory = info->mem_total_bytes;
        one_done();
      });
  for (const char* key : {"target", "drafter", "reference"}) {
    std::string path = spec_.engine.value(key, std::string());
    if (path.empty()) continue;
    ++*pending;
    ListCall call = [self](nlohmann::json args, ReplyFn fn) {
      self->env_.call_agent(self->spec_.host, protocol::FsListArgs::kOp, std::move(args), std::move(fn));
    };
    list_host_path(call, path, spec_.host + ":" + path,
                   [total, listed, one_done, key = std::string(key)](Result<protocol::FsListReply> r) {
                     if (r.ok()) {
                       const int64_t bytes = listed_bytes(*r);
                       *total = std::min(*total, INT64_MAX - bytes) + bytes;  // saturates
                       listed->push_back(key + " " + gib_text(bytes));
                     }
                     one_done();
                   });
  }
}

// One coordinator prompts file after another (a dataset each), then the job.
void RemoteEvalStage::ship_prompts(size_t next) {
  if (next >= spec_.coordinator_prompts.size()) return start_job();
  const auto& [where, file] = spec_.coordinator_prompts[next];
  auto hash = HostFileUpload::file_hash(file);
  if (!hash.ok()) return fail("prompts: " + hash.status().message());
  std::string dest = ".ferry/eval-prompts/" + *hash + "-" + base_name(file);
  upload_ = std::make_shared<HostFileUpload>(env_, HostFile{file, spec_.host, dest, 0644});
  auto self = shared_from_this();
  upload_->start([self, dest, next, where = where](Status s, int64_t) {
    if (self->finished_) return;
    if (!s.ok()) return self->fail("prompts: " + s.message());
    self->spec_.engine[nlohmann::json::json_pointer(where)] = dest;
    self->ship_prompts(next + 1);
  });
}

void RemoteEvalStage::start_job() {
  // Even when cancelled already: this attempt's worker may be running from before a
  // coordinator crash, and only its job can stop it (CommandStage cancels once started).
  nlohmann::json engine = spec_.engine;
  engine["result"] = result_path_;
  CommandStageSpec worker_job;
  const std::string worker = worker_dest_[0] == '/' ? worker_dest_ : "./" + worker_dest_;
  worker_job.command = "exec " + shell_quote(worker) + " worker";
  worker_job.env = spec_.env;
  worker_job.env["FERRY_EVAL_SPEC"] = engine.dump();
  worker_job.timeout_s = spec_.timeout_s;
  worker_job.slurm = spec_.slurm;
  env_.record_event("eval.started", {{"host", spec_.host}, {"spec", engine}});
  // The log's lines: progress for the person watching, the last ones to explain a failure.
  job_env_ = std::make_unique<LogTapEnv>(env_, [this](const std::string& line) { on_line(line); });
  CommandSpec cs{spec_.host, spec_.attempt, std::move(worker_job), spec_.log_max};
  job_ = std::make_shared<CommandStage>(*job_env_, std::move(cs));
  auto self = shared_from_this();
  job_->start([self](StageOutcome o) { self->on_job_done(std::move(o)); });
  if (cancelled_) job_->cancel(cancel_hard_);
}

void RemoteEvalStage::on_line(const std::string& line) {
  pass_on_eval_progress(line, env_);
  tail_.push_back(line);
  if (tail_.size() > kLogTailLines) tail_.pop_front();
}

void RemoteEvalStage::on_job_done(StageOutcome o) {
  if (finished_) return;
  if (o.state == StageOutcome::State::kCancelled || o.state == StageOutcome::State::kTimedOut) return finish(o);
  job_outcome_ = std::move(o);
  auto self = shared_from_this();
  call_op(
      env_, spec_.host, protocol::FsStatArgs{result_path_}, [self](Result<protocol::FsStatReply> result) {
        if (self->finished_) return;
        if (!result.ok()) {
          if (transient_link_failure(result.status())) {
            auto timer =
                std::make_shared<boost::asio::steady_timer>(self->env_.io(), std::chrono::milliseconds(kRetryMs));
            return timer->async_wait([self, timer](const boost::system::error_code& ec) {
              if (!ec) self->on_job_done(self->job_outcome_);
            });
          }
          return self->fail("reading the eval result on " + self->spec_.host + ": " + result.status().message());
        }
        if (!result->exists) return self->fail(self->cannot_run_reason(self->job_outcome_));
        const int64_t size = result->size;
        if (size < 0) return self->fail("the eval result on " + self->spec_.host + " has a negative size");
        if (size > kMaxResultBytes) {
          return self->fail("the eval result on " + self->spec_.host + " is " + std::to_string(size) +
                            " bytes, more than the " + std::to_string(kMaxResultBytes >> 20) +
                            " MiB an eval result may hold (" + self->result_path_ + ")");
        }
        self->read_result(size, "");
      });
}

void RemoteEvalStage::read_result(int64_t size, std::string sofar) {
  if (static_cast<int64_t>(sofar.size()) >= size) {
    StageOutcome o = eval_outcome(sofar, cancelled_, /*append_text=*/false, env_);
    return finish(std::move(o));
  }
  int64_t offset = static_cast<int64_t>(sofar.size());
  int64_t len = std::min(kResultPiece, size - offset);
  auto self = shared_from_this();
  nlohmann::json args = protocol::FsReadArgs{result_path_, offset, len}.to_json();
  env_.call_agent(
      spec_.host, protocol::FsReadArgs::kOp, args,
      [self, size, sofar = std::move(sofar)](Result<protocol::Frame> r) mutable {
        if (self->finished_) return;
        if (!r.ok()) {
          if (transient_link_failure(r.status())) {
            auto timer =
                std::make_shared<boost::asio::steady_timer>(self->env_.io(), std::chrono::milliseconds(kRetryMs));
            return timer->async_wait([self, timer, size, sofar](const boost::system::error_code& ec) {
              if (!ec) self->read_result(size, sofar);
            });
          }
          return self->fail("reading the eval result on " + self->spec_.host + ": " + r.status().message());
        }
        // Each read must bring 1..len bytes: an empty one would never end, a longer one
        // would outgrow the size checked above.
        const int64_t len = std::min(kResultPiece, size - static_cast<int64_t>(sofar.size()));
        if (r->body.empty() || static_cast<int64_t>(r->body.size()) > len) {
          return self->fail("reading the eval result on " + self->spec_.host + ": asked for " + std::to_string(len) +
                            " bytes at offset " + std::to_string(sofar.size()) + ", got " +
                            std::to_string(r->body.size()) + " (was it truncated while read?)");
        }
        auto read = protocol::FsReadReply::from_json(r->header);
        if (!read.ok())
          return self->fail("reading the eval result on " + self->spec_.host + ": " + read.status().message());
        if (xxh128_hex(r->body.data(), r->body.size()) != read->hash) {
          return self->fail("the eval result read from " + self->spec_.host + " does not match its hash");
        }
        sofar += r->body;
        self->read_result(size, std::move(sofar));
      });
}

// Why the worker left no result: the loader's words when libtorch is missing,
// else the worker's own last line.
std::string RemoteEvalStage::cannot_run_reason(const StageOutcome& o) const {
  for (const auto& line : tail_) {
    if (line.find("error while loading shared libraries") != std::string::npos) {
      return "host '" + spec_.host + "' cannot run evals: the eval worker does not start there (" + line +
             "); it needs libtorch " + kEvalLibtorchVersion +
             ": install it on the host (Debian 12: apt-get install libtorch" + kEvalLibtorchVersion +
             "), or set LD_LIBRARY_PATH in the host's env to where it is";
    }
  }
  std::string last = tail_.empty() ? "" : tail_.back();
  if (o.exit_code == kLoaderFailedExit) {
    return "host '" + spec_.host + "' cannot run the eval worker (exit 127" + (last.empty() ? "" : ": " + last) + ")";
  }
  return "the eval worker on '" + spec_.host + "' left no result (" + (o.error.empty() ? "no error" : o.error) +
         (last.empty() ? "" : "; last log line: " + last) + ")";
}

void RemoteEvalStage::cancel(bool hard) {
  cancelled_ = true;
  cancel_hard_ = cancel_hard_ || hard;
  if (job_) job_->cancel(hard);  // else start_job cancels the job it starts or finds
}

void RemoteEvalStage::fail(const std::string& why) {
  StageOutcome o;
  o.error = why;
  finish(std::move(o));
}

void RemoteEvalStage::finish(StageOutcome o) {
  if (finished_) return;
  finished_ = true;
  if (upload_) upload_->abandon();
  auto done = std::move(done_);
  done(std::move(o));
}

}  // namespace ferry
