#include "agents/agent_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "agents/checkpoint_listing.h"
#include "agents/detached_job.h"
#include "agents/host_probe.h"
#include "agents/job_cgroup.h"
#include "agents/job_journal.h"
#include "agents/job_shell.h"
#include "agents/lane_listener.h"
#include "agents/slurm_job.h"
#include "base/beneath.h"
#include "base/capped_log.h"
#include "base/clock.h"
#include "base/file_lock.h"
#include "base/file_util.h"
#include "base/json_fields.h"
#include "base/peer_json.h"
#include "base/shell_quote.h"
#include "base/unique_fd.h"
#include "protocol/body_buffers.h"
#include "transfer/chunk_files.h"

namespace ferry {
namespace {

constexpr int64_t kMinLogMaxBytes = 4096;  // the workflow asks for at least 1M
/// Linux's MAX_ARG_STRLEN: the longest one exec argument or NAME=value may be.
constexpr size_t kMaxExecStringBytes = 128 * 1024;
constexpr double kHeartbeatEveryS = 5.0;
constexpr double kStopOlderAttemptS = 10.0;  // for a killed attempt's supervisor to record its end
constexpr double kStopOlderSlurmS = 120.0;   // past a typical KillWait (30 s) and a slow controller
constexpr int kPipeBytes = 1 << 20;          // F_SETPIPE_SZ for stdin/stdout (the default max for a user)
constexpr size_t kReadBytes = 1 << 20;       // most bytes one read() may take
// Job keys carry a random run uid since schema 2, so two coordinators meet here only
// when the same run is driven twice or both runs were recorded before that change.
constexpr char kSharedKeyAdvice[] =
    "Another state database or coordinator is driving a run with the same job key: run it from one "
    "coordinator, or start a new run (new runs get unique job keys); remove that folder only if its run is gone";

// An op's reply as its header: a typed one (protocol/ops/) through its to_json().
template <typename Reply>
Result<nlohmann::json> reply_json(Result<Reply> reply) {
  if (!reply.ok()) return reply.status();
  if constexpr (std::is_same_v<Reply, nlohmann::json>) {
    return std::move(reply).value();
  } else {
    return reply->to_json();
  }
}

// An op's typed handler (protocol/ops/): its request read exactly, its reply written.
template <typename Args, typename Handler>
Result<nlohmann::json> typed(const nlohmann::json& header, Handler handler) {
  auto args = Args::from_json(header);
  if (!args.ok()) return args.status();
  return reply_json(handler(*args));
}

// A reply whose list grows with the data (files, chunks): the list rides in the
// body (protocol::move_field_to_body), so no folder or file size meets the header cap.
Result<nlohmann::json> in_body(nlohmann::json reply, const std::string& key, const std::string& what,
                               std::string* body) {
  auto moved = protocol::move_field_to_body(&reply, key, what);
  if (!moved.ok()) return moved.status();
  *body = std::move(moved).value();
  return reply;
}

// The prefix and the body in one writev: a chunk is never copied into a frame buffer.
bool write_frame(int fd, const protocol::Frame& frame) {
  std::string prefix = protocol::encode_frame_prefix(frame);
  iovec iov[2] = {{const_cast<char*>(prefix.data()), prefix.size()},
                  {const_cast<char*>(frame.body.data()), frame.body.size()}};
  int cnt = frame.body.empty() ? 1 : 2;
  iovec* v = iov;
  while (cnt > 0) {
    ssize_t n = ::writev(fd, v, cnt);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    size_t left = static_cast<size_t>(n);
    while (cnt > 0 && left >= v->iov_len) {
      left -= v->iov_len;
      ++v;
      --cnt;
    }
    if (cnt > 0) {
      v->iov_base = static_cast<char*>(v->iov_base) + left;
      v->iov_len -= left;
    }
  }
  return true;
}

}  // namespace

AgentServer::AgentServer(std::string workdir) : workdir_(std::move(workdir)), slurm_(std::make_unique<SlurmQueue>()) {}

AgentServer::~AgentServer() = default;

Result<JobRecord> AgentServer::read_record(const JobPaths& paths) {
  if (is_slurm_attempt(paths)) return read_slurm_record(paths, *slurm_);
  return read_job_record(paths);
}

std::string AgentServer::resolve(const std::string& path) const { return join_path(workdir_, path); }

protocol::Frame AgentServer::handle(const protocol::Frame& request) {
  try {
    return dispatch(request);
  } catch (const std::exception& e) {  // a mistyped argument must not kill the agent
    return protocol::make_error(request.request_id, invalid_argument(std::string("bad request: ") + e.what()));
  }
}

protocol::Frame AgentServer::dispatch(const protocol::Frame& request) {
  if (request.type != protocol::FrameType::kRequest) {
    return protocol::make_error(request.request_id, invalid_argument("expected a request frame"));
  }
  auto op_it = request.header.find("op");
  if (op_it == request.header.end() || !op_it->is_string()) {
    return protocol::make_error(request.request_id, invalid_argument("request without 'op'"));
  }
  const std::string op = *op_it;
  const nlohmann::json& h = request.header;
  std::string body;
  Result<nlohmann::json> r = invalid_argument("unknown op '" + op + "'");
  if (op == "hello") r = hello();
  else if (op == "ping") r = nlohmann::json{{"now_ms", now_ms()}};
  else if (op == protocol::JobStartArgs::kOp)
    r = typed<protocol::JobStartArgs>(h, [&](auto& a) { return job_start(a); });
  else if (op == protocol::JobRef::kOp) r = typed<protocol::JobRef>(h, [&](auto& a) { return job_status(a); });
  else if (op == protocol::JobCancelArgs::kOp)
    r = typed<protocol::JobCancelArgs>(h, [&](auto& a) { return job_cancel(a); });
  else if (op == protocol::LogReadArgs::kOp)
    r = typed<protocol::LogReadArgs>(h, [&](auto& a) { return log_read(a, &body); });
  else if (op == protocol::FsStatArgs::kOp) r = typed<protocol::FsStatArgs>(h, [&](auto& a) { return fs_stat(a); });
  else if (op == "host.info") r = host_info(workdir_).to_json();
  else if (op == "slurm.info") r = reply_json(slurm_info());
  else if (op == protocol::NetProbeArgs::kOp)
    r = typed<protocol::NetProbeArgs>(h, [&](auto& a) { return net_probe(a); });
  else if (op == protocol::FsListArgs::kOp)
    r = typed<protocol::FsListArgs>(h, [&](auto& a) { return fs_list(a, &body); });
  else if (op == protocol::FsScanArgs::kOp)
    r = typed<protocol::FsScanArgs>(h, [&](auto& a) { return fs_scan(a, &body); });
  else if (op == protocol::FsReadArgs::kOp)
    r = typed<protocol::FsReadArgs>(h, [&](auto& a) { return fs_read(a, &body); });
  else if (op == protocol::FsHashArgs::kOp)
    r = typed<protocol::FsHashArgs>(h, [&](auto& a) { return fs_hash(a, &body); });
  else if (op == protocol::RecvBeginArgs::kOp)
    r = typed<protocol::RecvBeginArgs>(h, [&](auto& a) { return recv_begin(a, &body); });
  else if (op == protocol::RecvWriteArgs::kOp)
    r = typed<protocol::RecvWriteArgs>(h, [&](auto& a) { return recv_write(a, request.body); });
  else if (op == protocol::RecvCommitArgs::kOp)
    r = typed<protocol::RecvCommitArgs>(h, [&](auto& a) { return recv_commit(a, &body); });
  else if (op == protocol::RecvPrepareDirArgs::kOp)
    r = typed<protocol::RecvPrepareDirArgs>(h, [&](auto& a) { return recv_prepare_dir(a, request.body); });
  else if (op == protocol::RecvFinishDirArgs::kOp)
    r = typed<protocol::RecvFinishDirArgs>(h, [&](auto& a) { return recv_finish_dir(a, request.body); });
  if (!r.ok()) return protocol::make_error(request.request_id, r.status());
  return protocol::make_reply(request.request_id, std::move(r).value(), std::move(body));
}

Result<nlohmann::json> AgentServer::hello() {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  return nlohmann::json{{"protocol", protocol::kProtocolVersion},
                        {"version", kAgentVersion},
                        {"pid", ::getpid()},
                        {"workdir", workdir_},
                        {"hostname", host},
                        {"exe", self_exe()}};
}

namespace {

// spec.json's token: whose attempt it is. Read loosely, as an older agent may have
// written the file (a resumed run after an upgrade).
Result<std::string> attempt_token(const JobPaths& paths) {
  auto text = read_file(paths.spec());
  if (!text.ok()) return not_found("never started here");
  auto spec = parse_peer_json(*text, paths.spec());
  if (!spec.ok()) return data_loss("corrupt " + paths.spec());
  return fields_from_json<std::string>(*spec, paths.spec(), [](auto& v, std::string& token) { v("token", token); });
}

}  // namespace

Result<JobPaths> AgentServer::attempt_with_token(const protocol::JobRef& ref) {
  FERRY_RETURN_IF_ERROR(check_job_name(ref.job));
  if (ref.attempt < 1) return invalid_argument("attempt must be ≥ 1");
  JobPaths paths = job_paths(workdir_, ref.job, ref.attempt);
  auto token = attempt_token(paths);
  if (!token.ok() && token.status().code() == StatusCode::kNotFound)
    return not_found("job " + ref.job + " attempt " + std::to_string(ref.attempt) + " was never started here");
  if (!token.ok()) return token.status();
  if (*token != ref.token) {
    return failed_precondition("stale attempt token for job " + ref.job + " attempt " + std::to_string(ref.attempt) +
                               ": that attempt on this host was started by another coordinator (a different token)" +
                               "; its journal is " + paths.job_dir + ". " + kSharedKeyAdvice);
  }
  return paths;
}

Result<LaunchSpec> AgentServer::launch_spec(const protocol::JobStartArgs& args) const {
  FERRY_RETURN_IF_ERROR(check_job_name(args.ref.job));
  if (args.ref.attempt < 1) return invalid_argument("attempt must be ≥ 1");
  LaunchSpec spec;
  spec.command = args.command;
  spec.cwd = args.cwd.empty() ? workdir_ : resolve(args.cwd);
  spec.timeout_s = args.timeout_s;
  spec.shell = args.shell;
  if (args.log_max) {
    if (*args.log_max < kMinLogMaxBytes) {
      return invalid_argument("job.start: 'log_max' must be an integer of at least " + std::to_string(kMinLogMaxBytes) +
                              " bytes");
    }
    spec.log_max = *args.log_max;
  }
  for (const auto& [k, v] : args.env) {
    // exec(2) refuses a longer NAME=value (Linux MAX_ARG_STRLEN): say so now, by name.
    if (k.size() + 1 + v.size() >= kMaxExecStringBytes) {
      return invalid_argument("job.start: env '" + k + "' is " + std::to_string(v.size()) +
                              " bytes; a process's environment variable holds less than " +
                              std::to_string(kMaxExecStringBytes) + " (Linux): pass so large a value in a file");
    }
  }
  spec.env = args.env;
  return spec;
}

Result<protocol::JobStartReply> AgentServer::job_start(const protocol::JobStartArgs& args) {
  auto spec = launch_spec(args);
  if (!spec.ok()) return spec.status();
  const std::string& job = args.ref.job;
  JobPaths paths = job_paths(workdir_, job, args.ref.attempt);
  // One start at a time per job, across agents (a coordinator that lost the link
  // mid-start sends job.start again through a new agent): the second waits here
  // and then finds the first one's attempt, which it re-attaches to.
  FERRY_RETURN_IF_ERROR(make_dirs(paths.job_dir));
  // Bounded: a first start stuck on the host (a hung file system) must not hang
  // this agent too; the coordinator retries an unavailable start.
  auto lock = FileLock::try_take(paths.lock(), start_lock_wait_ms_);
  if (!lock.ok()) {
    if (lock.status().code() != StatusCode::kFailedPrecondition) return lock.status();
    return unavailable("job " + job + ": another start of it has held " + paths.lock() + " for " +
                       std::to_string(start_lock_wait_ms_ / 1000) + " s; try again later");
  }
  protocol::JobStartReply reply;
  auto started = take_over(paths, args.ref, &reply);
  if (!started.ok()) return started.status();
  if (*started) return reply;  // the same attempt, started before: a re-attach
  spec->start_lock_fd = lock->fd();
  FERRY_RETURN_IF_ERROR(launch_attempt(paths, args, &*spec));
  auto rec = read_record(paths);
  if (!rec.ok()) return rec.status();
  reply.record = std::move(rec).value();
  return reply;
}

// Newest attempt wins: an older or competing token is refused, the same one is a
// re-attach (true, with its record in *reply), a newer one stops the older.
Result<bool> AgentServer::take_over(const JobPaths& paths, const protocol::JobRef& ref,
                                    protocol::JobStartReply* reply) {
  auto current = read_file(paths.current());
  if (!current.ok()) return false;
  int cur_attempt = 0;
  std::string cur_token;
  size_t space = current->find(' ');
  if (space != std::string::npos) {
    cur_attempt = std::atoi(current->substr(0, space).c_str());
    cur_token = current->substr(space + 1);
  }
  const std::string& job = ref.job;
  if (ref.attempt < cur_attempt) {
    return failed_precondition("stale attempt token for job " + job + ": attempt " + std::to_string(ref.attempt) +
                               " refused, attempt " + std::to_string(cur_attempt) +
                               " is newer on this host (a later resume of this run took over); this coordinator "
                               "must stop driving the stage: see `ferry status` for the newer attempt");
  }
  if (ref.attempt == cur_attempt && cur_token != ref.token) {
    return failed_precondition("stale attempt token for job " + job + ": attempt " + std::to_string(ref.attempt) +
                               " on this host was started by another coordinator (a different token); its journal is " +
                               paths.job_dir + ". " + kSharedKeyAdvice);
  }
  if (ref.attempt == cur_attempt) {
    auto rec = read_record(paths);
    if (!rec.ok() && is_slurm_attempt(paths)) {
      // sbatch ran but its answer was never recorded: find the job by its name.
      auto adopted = adopt_slurm_job(paths);
      if (!adopted.ok() && adopted.status().code() != StatusCode::kNotFound) return adopted.status();
      if (adopted.ok()) rec = read_record(paths);
    }
    if (!rec.ok()) return false;  // spec written but the launch never finished: launch it now
    reply->record = std::move(rec).value();
    reply->reattached = true;
    return true;
  }
  if (cur_attempt > 0) {
    // Never two attempts at once: an older attempt still running here (its
    // coordinator gave up on this host, or a resume started afresh) is stopped,
    // and gone, before the new one starts. The reply names it only if it was
    // still running: an attempt that had ended is no news to the coordinator.
    auto stopped = stop_attempt(job_paths(workdir_, job, cur_attempt));
    if (!stopped.ok()) return stopped.status();
    if (*stopped) reply->stopped_attempt = cur_attempt;
  }
  return false;
}

// Writes the attempt's spec and `current`, then starts the job: detached, or
// submitted to Slurm.
Status AgentServer::launch_attempt(const JobPaths& paths, const protocol::JobStartArgs& args, LaunchSpec* spec) {
  FERRY_RETURN_IF_ERROR(make_dirs(paths.attempt_dir));
  FERRY_RETURN_IF_ERROR(make_dirs(spec->cwd));
  protocol::JobStartArgs recorded = args;
  recorded.cwd = spec->cwd;
  recorded.log_max = spec->log_max;
  // The job's env may hold secrets: the spec is the user's alone.
  FERRY_RETURN_IF_ERROR(write_file_atomic(paths.spec(), recorded.to_json().dump(), 0600));
  if (spec->command.size() >= kMaxExecStringBytes) {
    // Too long for one exec argument: the shell reads it from a file instead.
    std::string file = paths.attempt_dir + "/command.sh";
    FERRY_RETURN_IF_ERROR(write_file_atomic(file, spec->command, 0600));
    spec->command = ". " + shell_quote(file);
  }
  FERRY_RETURN_IF_ERROR(choose_shell(paths, spec));
  const bool slurm = args.slurm.has_value();
  if (!slurm && spec->shell == "bash" && spec->bash.empty()) {
    return failed_precondition("the stage's shell is bash, and this host has no bash on its PATH");
  }
  FERRY_RETURN_IF_ERROR(write_file_atomic(paths.current(), std::to_string(args.ref.attempt) + " " + args.ref.token));
  if (slurm) {
    // Named after the job key (<run>.<uid>.<stage>) and the attempt: how a lost id is found again.
    return submit_slurm_job(paths, *spec, *args.slurm, args.ref.job + "." + std::to_string(args.ref.attempt)).status();
  }
  return launch_detached(paths, *spec).status();
}

// The script's shell (job_shell.h): a template's script goes to a file of the
// attempt's and the template runs with plain sh; bash is looked up where the job's
// PATH says (a Slurm node looks again itself).
Status AgentServer::choose_shell(const JobPaths& paths, LaunchSpec* spec) {
  if (is_shell_template(spec->shell)) {
    std::string file = paths.attempt_dir + "/script";
    FERRY_RETURN_IF_ERROR(write_file_atomic(file, spec->command, 0700));
    spec->command = fill_shell_template(spec->shell, file);
    spec->shell = "sh";
    return Status();
  }
  if (spec->shell != "" && spec->shell != "bash" && spec->shell != "sh") {
    return invalid_argument("job.start: shell '" + spec->shell + "' is not bash, sh or a template with {0}");
  }
  auto path = spec->env.find("PATH");
  const char* agent_path = std::getenv("PATH");
  spec->bash = find_bash(path != spec->env.end() ? path->second : agent_path ? agent_path : "/usr/bin:/bin");
  return Status();
}

Result<bool> AgentServer::stop_attempt(const JobPaths& older) {
  auto rec = read_record(older);
  if (!rec.ok()) return false;
  if (is_slurm_attempt(older)) {
    if (rec->state != JobState::kRunning) return false;
    FERRY_RETURN_IF_ERROR(stop_slurm_attempt(older, rec->slurm_job));
    return true;
  }
  // What an attempt that ended left running in its cgroup (a daemon, a setsid'd
  // child) goes too: it could still write where the new attempt writes.
  if (rec->state != JobState::kRunning) {
    if (!rec->cgroup.empty()) FERRY_RETURN_IF_ERROR(job_cgroup_kill(rec->cgroup, kStopOlderAttemptS * 1000));
    return false;
  }
  FERRY_RETURN_IF_ERROR(signal_job(older, /*hard=*/true));
  // Its supervisor reaps the group and records the exit at once; wait for that.
  auto until = mono_s() + kStopOlderAttemptS;
  while (mono_s() < until) {
    rec = read_job_record(older);
    if (!rec.ok() || rec->state != JobState::kRunning) return true;
    ::usleep(20 * 1000);
  }
  return unavailable("attempt " + older.attempt_dir + " is still running after SIGKILL; the new attempt waits");
}

// Slurm stops the older job; it is gone once Slurm says it no longer runs (asked
// directly, not from the cached listing), KillWait after the TERM at the latest.
Status AgentServer::stop_slurm_attempt(const JobPaths& older, const std::string& job_id) {
  FERRY_RETURN_IF_ERROR(cancel_slurm_job(older, /*hard=*/true));
  auto sub = read_slurm_submission(older);
  const std::string name = sub.ok() ? sub->name : "";
  auto until = mono_s() + kStopOlderSlurmS;
  while (mono_s() < until) {
    auto st = slurm_->ask(job_id, name);
    if (!st.ok() && st.status().code() == StatusCode::kNotFound) return Status();
    if (st.ok() && st->state != "RUNNING" && st->state != "COMPLETING" && st->state != "PENDING") return Status();
    ::usleep(500 * 1000);
  }
  return unavailable("Slurm job " + job_id + " of " + older.attempt_dir +
                     " still runs after scancel; the new attempt waits");
}

Result<protocol::JobRecord> AgentServer::job_status(const protocol::JobRef& ref) {
  auto paths = attempt_with_token(ref);
  if (!paths.ok()) return paths.status();
  return read_record(*paths);
}

Result<protocol::JobRecord> AgentServer::job_cancel(const protocol::JobCancelArgs& args) {
  auto paths = attempt_with_token(args.ref);
  if (!paths.ok()) return paths.status();
  if (is_slurm_attempt(*paths)) {
    FERRY_RETURN_IF_ERROR(cancel_slurm_job(*paths, args.hard));
  } else {
    FERRY_RETURN_IF_ERROR(signal_job(*paths, args.hard));
  }
  return read_record(*paths);
}

Result<protocol::LogReadReply> AgentServer::log_read(const protocol::LogReadArgs& args, std::string* body) {
  FERRY_RETURN_IF_ERROR(check_job_name(args.job));
  int64_t max = std::min(args.max, protocol::kMaxLogRead);
  if (args.offset < 0 || max < 0) return invalid_argument("negative offset or max");
  JobPaths paths = job_paths(workdir_, args.job, args.attempt);
  // Offsets count every byte the job wrote, so they hold across the log's rotation;
  // bytes that were dropped are skipped over and counted (capped_log.h).
  auto read = read_capped_log(paths.log(), args.offset, max);
  if (!read.ok()) return read.status();
  *body = std::move(read->bytes);
  return protocol::LogReadReply{read->offset, read->size, read->dropped};
}

Result<std::string> AgentServer::data_path(const std::string& path) const {
  if (path.empty()) return invalid_argument("empty 'path'");
  return resolve_data_path(workdir_, path);
}

Result<UniqueFd> AgentServer::open_data(const std::string& path, int flags) const {
  if (path.empty()) return invalid_argument("empty 'path'");
  return open_data_path(workdir_, path, flags);
}

Result<DestFolder> AgentServer::dest_folder(const std::string& path, bool create, std::string* name) const {
  if (path.empty()) return invalid_argument(std::string("empty '") + (name ? "dest" : "path") + "'");
  return name ? open_dest_parent(workdir_, path, create, name) : open_dest_folder(workdir_, path, create);
}

Result<nlohmann::json> AgentServer::fs_list(const protocol::FsListArgs& a, std::string* body) {
  auto path = data_path(a.path);
  if (!path.ok()) return path.status();
  // Non-blocking: a FIFO named as a source is refused, not waited on.
  auto source = open_data(a.path, O_RDONLY | O_NONBLOCK);
  if (!source.ok()) return source.status();
  auto listing = list_source_page(source->get(), *path, a.after, a.limit.value_or(kListPageFiles));
  if (!listing.ok()) return listing.status();
  return in_body(listing->to_json(), "files", "the listing of " + *path, body);
}

Result<nlohmann::json> AgentServer::fs_scan(const protocol::FsScanArgs& a, std::string* body) {
  auto path = data_path(a.path);
  if (!path.ok()) return path.status();
  auto listing = list_checkpoints(workdir_, a.path, a.pattern, a.after, a.max_entries.value_or(kMaxScanPageEntries));
  if (!listing.ok()) return listing.status();
  return in_body(listing->to_json(), "folders", "the checkpoint listing of " + *path, body);
}

Result<protocol::FsReadReply> AgentServer::fs_read(const protocol::FsReadArgs& a, std::string* body) {
  auto path = data_path(a.path);
  if (!path.ok()) return path.status();
  auto file = open_data(a.path, O_RDONLY);
  if (!file.ok()) return file.status();
  std::string hash;
  auto data = read_chunk(file->get(), *path, a.offset, a.length, &hash);
  if (!data.ok()) return data.status();
  *body = std::move(data).value();
  return protocol::FsReadReply{hash, static_cast<int64_t>(body->size())};
}

Result<nlohmann::json> AgentServer::fs_hash(const protocol::FsHashArgs& a, std::string* body) {
  auto path = data_path(a.path);
  if (!path.ok()) return path.status();
  auto file = open_data(a.path, O_RDONLY);
  if (!file.ok()) return file.status();
  auto hashes = hash_chunks(file->get(), *path, a.chunk_size, a.indices);
  if (!hashes.ok()) return hashes.status();
  return in_body(protocol::FsHashReply{std::move(hashes).value()}.to_json(), "chunks", "the chunk hashes of " + *path,
                 body);
}

Result<nlohmann::json> AgentServer::recv_prepare_dir(const protocol::RecvPrepareDirArgs& a, const std::string& files) {
  auto path = data_path(a.path);
  if (!path.ok()) return path.status();
  FERRY_RETURN_IF_ERROR(check_folder_copy_root(*path, workdir_));
  auto dir = dest_folder(a.path, /*create=*/true);
  if (!dir.ok()) return dir.status();
  // The copy's files, when sent, ride in the body and are recorded as ferry's
  // before any is written (transfer/copied_files.h).
  std::vector<std::string> incoming = decode_keep_list(files);
  FERRY_RETURN_IF_ERROR(receive_prepare_dir(*dir, a.record ? &incoming : nullptr));
  return nlohmann::json::object();
}

Result<nlohmann::json> AgentServer::recv_finish_dir(const protocol::RecvFinishDirArgs& a, const std::string& kept) {
  auto path = data_path(a.path);
  if (!path.ok()) return path.status();
  if (a.prune) FERRY_RETURN_IF_ERROR(check_folder_copy_root(*path, workdir_));
  // The marker is written, and the prune acts, in the folder opened here: never
  // through a symlink swapped in since (review F26).
  auto dir = dest_folder(a.path, /*create=*/false);
  if (!dir.ok()) return dir.status();
  // The copy's files ride in the body: a folder of 100,000 files is no header.
  std::vector<std::string> keep = decode_keep_list(kept);
  PruneReport pruned;
  FERRY_RETURN_IF_ERROR(
      receive_finish_dir(*dir, a.manifest_hash, a.prune ? &keep : nullptr, a.prune ? &pruned : nullptr));
  return a.prune ? prune_report_json(pruned) : nlohmann::json::object();
}

// Each recv op opens the file's folder anew, refusing a symlink swapped in since
// the last one, and acts in that folder only.
Result<nlohmann::json> AgentServer::recv_begin(const protocol::RecvBeginArgs& a, std::string* body) {
  std::string name;
  auto dir = dest_folder(a.dest, /*create=*/true, &name);
  if (!dir.ok()) return dir.status();
  auto st = receive_begin(*dir, name, a.size, a.chunk_size, a.mode, a.file_hash, a.owner);
  if (!st.ok()) return st.status();
  return in_body(protocol::RecvBeginReply{st->complete, std::move(st->have)}.to_json(), "have",
                 "the chunks held of " + dir->shown(name), body);
}

Result<nlohmann::json> AgentServer::recv_write(const protocol::RecvWriteArgs& a, const std::string& chunk) {
  std::string name;
  auto dir = dest_folder(a.dest, /*create=*/false, &name);
  if (!dir.ok()) return dir.status();
  FERRY_RETURN_IF_ERROR(receive_write(*dir, name, a.index, a.chunk_size, a.hash, chunk, a.owner));
  return nlohmann::json::object();
}

Result<nlohmann::json> AgentServer::recv_commit(const protocol::RecvCommitArgs& a, std::string* body) {
  std::string name;
  auto dir = dest_folder(a.dest, /*create=*/false, &name);
  if (!dir.ok()) return dir.status();
  std::vector<int64_t> bad;
  Status s = receive_commit(*dir, name, a.chunk_size, a.chunks, &bad, a.owner);
  if (!s.ok() && !bad.empty()) {
    return in_body(protocol::RecvCommitReply{false, std::move(bad), s.message()}.to_json(), "bad",
                   "the bad chunks of " + dir->shown(name), body);
  }
  if (!s.ok()) return s;
  return protocol::RecvCommitReply{true, {}, ""}.to_json();
}

Result<protocol::NetProbeReply> AgentServer::net_probe(const protocol::NetProbeArgs& args) {
  if (args.port < 1 || args.port > 65535) return invalid_argument("port out of range");
  return probe_tcp(args.address, args.port, std::clamp(args.timeout_ms, 1, 10000));
}

Result<protocol::FsStatReply> AgentServer::fs_stat(const protocol::FsStatArgs& args) {
  auto path = data_path(args.path);
  if (!path.ok()) return path.status();
  return stat_reply(*path);
}

// Writes frames to the coordinator for the serve loop and, every
// kHeartbeatEveryS that nothing else went out, a heartbeat: from a thread of its
// own, so an operation that takes minutes (hashing a 100 GiB file on slow
// storage, an fsync that stalls) keeps the link alive instead of being taken for
// a dead agent and sent again.
class AgentServer::Output {
 public:
  explicit Output(int fd) : fd_(fd), last_out_(mono_s()), beats_([this] { beat_loop(); }) {}
  ~Output() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    beats_.join();
  }
  bool write(const protocol::Frame& frame) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_) return false;
    failed_ = !write_frame(fd_, frame);
    last_out_ = mono_s();
    return !failed_;
  }

 private:
  void beat_loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      double due = last_out_ + kHeartbeatEveryS - mono_s();
      if (due > 0) {
        cv_.wait_for(lock, std::chrono::duration<double>(due));
        continue;
      }
      protocol::Frame beat;
      beat.type = protocol::FrameType::kEvent;
      beat.header = {{"event", "heartbeat"}, {"now_ms", now_ms()}};
      if (!failed_) failed_ = !write_frame(fd_, beat);
      last_out_ = mono_s();
    }
  }

  int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool failed_ = false;
  double last_out_;
  std::thread beats_;  // last: started once the rest is set
};

int AgentServer::serve(int in_fd, int out_fd, double idle_exit_s, LaneListener* lanes) {
  // Lanes are taken up on a thread of their own, so a request that blocks here
  // (a start waiting on its lock, a slow Slurm client) holds up no lane (review P5).
  if (lanes) {
    Status s = lanes->serve_in_background(workdir_, idle_exit_s);
    if (!s.ok()) std::fprintf(stderr, "ferry-agent: no lanes: %s\n", s.message().c_str());
  }
  int code = serve_requests(in_fd, out_fd, idle_exit_s);
  if (lanes) lanes->stop_serving();
  return code;
}

int AgentServer::serve_requests(int in_fd, int out_fd, double idle_exit_s) {
  // Bigger pipes to and from sshd: a 2 MiB chunk crosses in a few system calls
  // and context switches instead of one per 64 KiB. Sockets and files refuse; fine.
  (void)::fcntl(in_fd, F_SETPIPE_SZ, kPipeBytes);
  (void)::fcntl(out_fd, F_SETPIPE_SZ, kPipeBytes);
  protocol::FrameDecoder decoder;
  Output out(out_fd);
  double last_in = mono_s();
  for (;;) {
    pollfd p = {in_fd, POLLIN, 0};
    int r = ::poll(&p, 1, 1000);
    if (r < 0 && errno != EINTR) return 1;
    double now = mono_s();
    if (r > 0 && p.revents != 0) {
      // Straight into the decoder: a chunk's body is read in place, never copied.
      auto [dst, room] = decoder.prepare(kReadBytes);
      ssize_t n = ::read(in_fd, dst, room);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) return 0;  // the coordinator hung up: jobs keep running
      decoder.commit(static_cast<size_t>(n));
      last_in = now;
      for (;;) {
        auto next = decoder.next();
        if (!next.ok()) {
          out.write(protocol::make_error(0, next.status()));
          return 2;
        }
        if (!next->has_value()) break;
        protocol::Frame reply = handle(**next);
        if (!out.write(reply)) return 1;
        // Chunk bodies (a write's request, a read's reply) carry the next chunks.
        protocol::recycle_body_buffer(std::move((*next)->body));
        protocol::recycle_body_buffer(std::move(reply.body));
        last_in = mono_s();  // a long operation is not the coordinator's silence
      }
    }
    if (now - last_in > idle_exit_s) return 3;  // a silent coordinator is a dead one
  }
}

}  // namespace ferry
