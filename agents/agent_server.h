// AgentServer: the request handler and serve loop of `ferry-agent serve`.
//
// Speaks the framed protocol (protocol/frame.h) over two fds. Requests are
// handled in order, one at a time; replies carry the request id. Jobs are
// detached (detached_job.h); what may still take long (hashing, committing a
// large file) is covered by heartbeats, which a second thread writes whenever
// nothing went out for kHeartbeatEveryS, during an operation too. A malformed
// frame gets an error frame and the connection is closed: the agent never
// crashes on input. Requests are handled on the calling thread only.
//
// Ops (header "op"; results in the reply header). Their messages are structs in
// protocol/ops/, read exactly (an unknown or mistyped field is
// refused by name):
//   hello      {}                                   → {protocol, version, pid, workdir, hostname}
//   ping       {}                                   → {now_ms}
//   job.start  JobStartArgs                         → JobStartReply (idempotent for the same token);
//              with `slurm` (sbatch options) the job is submitted to Slurm (slurm_job.h)
//   job.status JobRef                               → JobRecord
//   job.cancel JobCancelArgs                        → JobRecord
//   log.read   LogReadArgs                          → LogReadReply, body = bytes
//   host.info  {}                                   → HostInfoReply: cores, memory, free disk, GPUs
//   slurm.info {}                                   → SlurmInfoReply from sinfo (slurm_job.h)
//   net.probe  NetProbeArgs                         → NetProbeReply (protocol/ops/host.h)
//   fs.stat, fs.list, fs.scan, fs.read, fs.hash     protocol/ops/fs.h: a host's files read (requests and replies)
//   recv.begin, recv.write, recv.commit, recv.prepare_dir, recv.finish_dir
//                                                   protocol/ops/recv.h: a copy's receiving side
// (see chunk_files.h for the receiver's guarantees). A relative path is taken beneath the
// workdir and never through a symlink there (base/beneath.h); an absolute one as named.
// The lists that grow with the data (fs.list files, fs.scan folders, fs.hash indices and chunks,
// recv.begin have, recv.commit chunks and bad) ride in the frame body as JSON
// (protocol::move_field_to_body): a folder of 100,000 files or a file of 64 GiB
// meets no header cap; the decoder puts each back where it is shown above.
// A token older than the job's newest attempt is refused ("stale attempt token"),
// so an attempt the coordinator gave up on can never start after a partition heals;
// a newer attempt stops an older one that still runs before it starts (never two
// at once), and starts of one job are serialized by a lock in its folder.
#pragma once

#include <memory>
#include <string>

#include "agents/detached_job.h"
#include "agents/job_journal.h"
#include "base/unique_fd.h"
#include "base/version.h"
#include "protocol/frame.h"
#include "protocol/ops/fs.h"
#include "protocol/ops/host.h"
#include "protocol/ops/job.h"
#include "protocol/ops/recv.h"
#include "transfer/dest_folder.h"

namespace ferry {

class LaneListener;
class SlurmQueue;
inline constexpr const char* kAgentVersion = kFerryVersion;

class AgentServer {
 public:
  explicit AgentServer(std::string workdir);
  ~AgentServer();

  /// Handles one request frame and returns its reply or error frame.
  protocol::Frame handle(const protocol::Frame& request);

  /// Reads requests from in_fd and writes replies to out_fd until EOF, a bad frame,
  /// or `idle_exit_s` without a byte from the peer. Returns the process exit code.
  /// With `lanes`, also accepts data lanes on its socket meanwhile, on a thread of
  /// the listener's (lane_listener.h), so a request that blocks holds up no lane.
  int serve(int in_fd, int out_fd, double idle_exit_s = 120, LaneListener* lanes = nullptr);

  /// How long job.start waits for another start of the same job (default 30 s)
  /// before it answers unavailable. Tests shorten it.
  void set_start_lock_wait_ms(int ms) { start_lock_wait_ms_ = ms; }

 private:
  class Output;
  int serve_requests(int in_fd, int out_fd, double idle_exit_s);
  protocol::Frame dispatch(const protocol::Frame& request);
  Result<nlohmann::json> hello();
  Result<protocol::JobStartReply> job_start(const protocol::JobStartArgs& args);
  /// What job.start launches, from its arguments, checked.
  Result<LaunchSpec> launch_spec(const protocol::JobStartArgs& args) const;
  Result<bool> take_over(const JobPaths& paths, const protocol::JobRef& ref, protocol::JobStartReply* reply);
  Status launch_attempt(const JobPaths& paths, const protocol::JobStartArgs& args, LaunchSpec* spec);
  Result<protocol::JobRecord> job_status(const protocol::JobRef& ref);
  /// Stops an older attempt of a job if it still runs, and waits until it is gone;
  /// kills what an ended one left in its cgroup. True when it was still running.
  Result<bool> stop_attempt(const JobPaths& older);
  Status choose_shell(const JobPaths& paths, LaunchSpec* spec);
  Status stop_slurm_attempt(const JobPaths& older, const std::string& job_id);
  /// The journal's record of an attempt: a detached job's, or a Slurm job's (slurm_job.h).
  Result<JobRecord> read_record(const JobPaths& paths);
  Result<protocol::JobRecord> job_cancel(const protocol::JobCancelArgs& args);
  Result<protocol::LogReadReply> log_read(const protocol::LogReadArgs& args, std::string* body);
  Result<protocol::NetProbeReply> net_probe(const protocol::NetProbeArgs& args);
  // The file ops (protocol/ops/fs.h, recv.h), served by transfer/chunk_files.h.
  Result<protocol::FsStatReply> fs_stat(const protocol::FsStatArgs& args);
  Result<nlohmann::json> fs_list(const protocol::FsListArgs& args, std::string* body);
  Result<nlohmann::json> fs_scan(const protocol::FsScanArgs& args, std::string* body);
  Result<protocol::FsReadReply> fs_read(const protocol::FsReadArgs& args, std::string* body);
  Result<nlohmann::json> fs_hash(const protocol::FsHashArgs& args, std::string* body);
  Result<nlohmann::json> recv_begin(const protocol::RecvBeginArgs& args, std::string* body);
  Result<nlohmann::json> recv_write(const protocol::RecvWriteArgs& args, const std::string& chunk);
  Result<nlohmann::json> recv_commit(const protocol::RecvCommitArgs& args, std::string* body);
  Result<nlohmann::json> recv_prepare_dir(const protocol::RecvPrepareDirArgs& args, const std::string& files);
  Result<nlohmann::json> recv_finish_dir(const protocol::RecvFinishDirArgs& args, const std::string& kept);
  /// A path argument resolved against the workdir; relative paths may not use ".."
  /// nor pass through a symlink (base/beneath.h).
  Result<std::string> data_path(const std::string& path) const;
  /// The same path opened: a relative one beneath the workdir, following no symlink.
  Result<UniqueFd> open_data(const std::string& path, int flags) const;
  /// The folder a copy writes in, held open so that every write lands in what was
  /// checked (transfer/dest_folder.h): the path's folder itself, or with `name` the
  /// folder that holds the file it names (*name set to the file's name there).
  Result<DestFolder> dest_folder(const std::string& path, bool create, std::string* name = nullptr) const;
  /// Checks the attempt's token against the journal; returns its paths.
  Result<JobPaths> attempt_with_token(const protocol::JobRef& ref);
  std::string resolve(const std::string& path) const;
  int start_lock_wait_ms_ = 30000;

  std::string workdir_;
  std::unique_ptr<SlurmQueue> slurm_;  // one squeue listing for all of this agent's Slurm jobs
};

}  // namespace ferry
