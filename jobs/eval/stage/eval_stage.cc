#include "jobs/eval/stage/eval_stage.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/child_process.h"
#include "base/file_util.h"
#include "jobs/eval/stage/eval_outcome.h"
#include "jobs/eval/stage/eval_progress_reader.h"

namespace ferry {
namespace {

// The folder the worker wrote its result in, with all it holds: result.json, and the
// temporary file (result.json.tmp.PID.RAND) of a worker that died writing it. The
// folder is ours (mkdtemp, 0700), so nothing in it is anyone else's.
void remove_result_dir(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") ::unlinkat(::dirfd(d), name.c_str(), 0);
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

constexpr size_t kMaxLineBytes = 64 * 1024;           // a longer line reaches the log in pieces of this size
constexpr int64_t kMaxResultBytes = 64 << 20;         // a report is KiBs; past this something is wrong
constexpr auto kKillGrace = std::chrono::seconds(5);  // SIGTERM → SIGKILL, as for a job on a host

// The result file, read whole, or why not. Its folder is ours (mkdtemp) and the
// worker is gone, so the size checked is the size read.
Result<std::string> read_result(const std::string& path, const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return internal_error("the eval result " + path + " is not a file");
  if (st.st_size > kMaxResultBytes) {
    return invalid_argument("the eval result is " + std::to_string(st.st_size) + " bytes, over the cap of " +
                            std::to_string(kMaxResultBytes));
  }
  return read_file(path);
}

std::string exit_text(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    std::string why = "the eval worker was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
    if (sig == SIGBUS) why += ": a file it had mapped (a checkpoint?) was cut short or rewritten while it ran";
    return why;
  }
  return "the eval worker exited with code " + std::to_string(WEXITSTATUS(wait_status)) + " and left no result";
}

}  // namespace

struct EvalStage::Worker {
  std::mutex mu;
  pid_t pid = -1;       // also its process group
  bool reaped = false;  // from then on the pid may name someone else's process

  void signal(int sig) {
    std::lock_guard<std::mutex> lock(mu);
    if (pid > 0 && !reaped) ::kill(-pid, sig);
  }
};

struct EvalStage::Exit {
  int wait_status = 0;
  bool has_result = false;
  std::string result;  // the result file's text, or why there is none to read
};

EvalStage::EvalStage(StageEnv& env, nlohmann::json spec, std::string worker)
    : env_(env),
      spec_(std::move(spec)),
      worker_path_(std::move(worker)) {}

EvalStage::~EvalStage() = default;

void EvalStage::start(std::function<void(StageOutcome)> done) {
  done_ = std::move(done);
  auto self = shared_from_this();
  auto fail_soon = [self](const std::string& why) {
    boost::asio::post(self->env_.io(), [self, why] {
      StageOutcome o;
      o.error = why;
      self->finish(std::move(o));
    });
  };
  // The result goes to a folder of our own, removed once read.
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/ferry-eval-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    return fail_soon(errno_status("making a folder for the eval result (" + dir + ")", errno).message());
  }
  const std::string result_path = dir + "/result.json";
  nlohmann::json spec = spec_;
  spec["result"] = result_path;
  ChildProcess::Options options;
  options.own_process_group = true;  // Ctrl-C reaches the coordinator, which decides
  options.stderr_to_stdout = true;
  options.die_with_parent = true;  // spawned on the io thread, which lives as long as ferry
  options.env = {"FERRY_EVAL_SPEC=" + spec.dump()};
  auto child = ChildProcess::spawn({worker_path_, "worker"}, options);
  if (!child.ok()) {
    ::rmdir(dir.c_str());
    return fail_soon("the eval engine is not available: " + child.status().message() +
                     "; build with FERRY_WITH_TORCH=ON (ferry-eval beside ferry) or set FERRY_SEND_EVAL_WORKER");
  }
  env_.record_event("eval.started", spec_);
  worker_ = std::make_shared<Worker>();
  worker_->pid = (*child)->pid();
  auto& io = env_.io();
  std::thread([self, &io, worker = worker_, child = std::move(*child), dir, result_path]() mutable {
    // Its output, line by line, to the io thread as it comes.
    std::string pending;
    std::vector<std::string> lines;
    std::vector<char> buf(64 * 1024);
    for (;;) {
      auto n = child->read_some(buf.data(), buf.size(), -1);
      if (!n.ok()) break;  // it closed its output: it is ending
      pending.append(buf.data(), *n);
      size_t from = 0;
      for (size_t nl; (nl = pending.find('\n', from)) != std::string::npos; from = nl + 1) {
        lines.push_back(pending.substr(from, nl - from));
      }
      pending.erase(0, from);
      for (; pending.size() >= kMaxLineBytes; pending.erase(0, kMaxLineBytes)) {
        lines.push_back(pending.substr(0, kMaxLineBytes));
      }
      if (!lines.empty()) boost::asio::post(io, [self, l = std::move(lines)] { self->on_lines(l); });
      lines.clear();
    }
    if (!pending.empty()) boost::asio::post(io, [self, pending] { self->on_lines({pending}); });
    // Wait for its exit without reaping it, so a cancel until then signals its group, no other.
    siginfo_t info{};
    while (::waitid(P_PID, worker->pid, &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
    }
    {
      std::lock_guard<std::mutex> lock(worker->mu);
      worker->reaped = true;
    }
    Exit e;
    e.wait_status = child->finish(0);
    struct stat st {};
    if (::lstat(result_path.c_str(), &st) == 0) {
      auto text = read_result(result_path, st);
      e.has_result = text.ok();
      e.result = text.ok() ? std::move(*text) : text.status().message();
    }
    remove_result_dir(dir);
    boost::asio::post(io, [self, e = std::move(e)] { self->on_exit(e); });
  }).detach();
}

void EvalStage::on_lines(const std::vector<std::string>& lines) {
  for (const auto& line : lines) {
    if (finished_) return;
    pass_on_eval_progress(line, env_);
    Status st = env_.append_log(line + "\n");
    if (!st.ok() && !log_failed_) {  // said once: lines keep coming
      log_failed_ = true;
      env_.note("progress not kept in the log: " + st.message());
    }
    if (!line.empty()) last_line_ = line;
  }
}

void EvalStage::on_exit(const Exit& e) {
  if (finished_) return;
  // The worker printed the readable report into the log already (on_lines).
  if (e.has_result) return finish(eval_outcome(e.result, cancelled_, /*append_text=*/false, env_));
  StageOutcome o;
  if (cancelled_) {
    o.state = StageOutcome::State::kCancelled;
    o.error = "cancelled";
  } else {
    o.error = e.result.empty() ? exit_text(e.wait_status) : e.result;
    if (!last_line_.empty()) o.error += "; its last line: " + last_line_;
  }
  finish(std::move(o));
}

void EvalStage::cancel(bool hard) {
  cancelled_ = true;
  if (!worker_ || finished_) return;
  worker_->signal(hard ? SIGKILL : SIGTERM);
  if (hard) return;
  // The engine stops between steps; one stuck elsewhere is killed after a grace.
  auto timer = std::make_shared<boost::asio::steady_timer>(env_.io(), kKillGrace);
  auto self = shared_from_this();
  timer->async_wait([self, timer](const boost::system::error_code& ec) {
    if (!ec && !self->finished_) self->worker_->signal(SIGKILL);
  });
}

void EvalStage::finish(StageOutcome o) {
  if (finished_) return;
  finished_ = true;
  auto done = std::move(done_);
  done(std::move(o));
}

}  // namespace ferry
