// The job ops of the agent protocol: what the coordinator sends to start, follow
// and stop a job on a host (jobs/command/command_stage.h), and what the agent
// answers (agents/agent_server.h). One struct per message, and one field list per
// struct in job.cc for both directions (base/json_fields.h), as leveldb's
// VersionEdit owns its EncodeTo and DecodeFrom: a key is spelt in one place.
// Reading is exact: a field the message does not have, one of the wrong type, or a
// required one missing is refused by name. Plain values; any thread.
//
//   job.start  JobStartArgs → JobStartReply  (idempotent for the same token)
//   job.status JobRef       → JobRecord
//   job.cancel JobCancelArgs → JobRecord
//   log.read   LogReadArgs  → LogReadReply, body = the bytes
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "base/status.h"

namespace ferry::protocol {

// The replies, named by their requests (Args::Reply) before they are defined.
struct JobRecord;
struct JobStartReply;
struct LogReadReply;

/// Where a job attempt stands on its host.
enum class JobState {
  kRunning,
  kExited,
  kLost,  // its supervisor and the job are gone, and no exit was recorded
};
inline constexpr EnumName<JobState> kJobStateNames[] = {
    {JobState::kRunning, "running"}, {JobState::kExited, "exited"}, {JobState::kLost, "lost"}};

/// One attempt of a job on a host. The token is the starting coordinator's: a
/// request with another is refused ("stale attempt token"). job.status's arguments.
struct JobRef {
  static constexpr const char* kOp = "job.status";
  using Reply = JobRecord;
  std::string job;  // "<run>.<uid>.<stage>": a folder name under the agent's .ferry/jobs
  int attempt = 0;  // 1, 2, ...
  std::string token;

  nlohmann::json to_json() const;
  static Result<JobRef> from_json(const nlohmann::json& j);
};

/// A Slurm host's sbatch options for one job (jobs/stage_spec.h: slurm_submit_json);
/// an empty or zero option is Slurm's default.
struct SlurmSubmit {
  std::string partition, account, qos, mem, gres;
  int cpus = 0;                      // --cpus-per-task
  int64_t time_min = 0;              // --time, in minutes
  std::vector<std::string> options;  // given to sbatch as they are

  nlohmann::json to_json() const;
  static Result<SlurmSubmit> from_json(const nlohmann::json& j);
};

/// job.start: a shell command run detached (agents/detached_job.h), or with
/// `slurm` as a Slurm batch job (agents/slurm_job.h).
struct JobStartArgs {
  static constexpr const char* kOp = "job.start";
  using Reply = JobStartReply;
  JobRef ref;
  std::string command;
  std::string shell;  // "" (sh), "sh", "bash" or a template with {0} (agents/job_shell.h)
  std::map<std::string, std::string> env;
  std::string cwd;                   // relative: beneath the agent's workdir; "": the workdir
  double timeout_s = 0;              // 0: none
  std::optional<int64_t> log_max;    // the log's head and tail are kept within it; none: the agent's default
  std::optional<SlurmSubmit> slurm;  // none: a detached job

  nlohmann::json to_json() const;
  static Result<JobStartArgs> from_json(const nlohmann::json& j);
};

/// What the journal says about an attempt now: job.status's and job.cancel's reply.
struct JobRecord {
  JobState state = JobState::kLost;
  int pid = 0;
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  bool cancelled = false;
  int64_t started_ms = 0;
  int64_t ended_ms = 0;
  int64_t log_size = 0;                        // every byte the job wrote, kept or dropped
  std::map<std::string, std::string> outputs;  // what it wrote to $FERRY_OUTPUT
  // A detached job's: whether a stop reaches what it starts with setsid ("cgroup";
  // "supervisor", while the attempt runs: agents/adopted_processes.h) or only its
  // process group ("process group"), and why not a cgroup (job_cgroup.h).
  std::string contained_by;
  std::string containment_note;
  std::string cgroup;  // the agent's own, never sent: the attempt's cgroup folder, "" when none
  // A Slurm job's: its id, state and reason ("PENDING", "Resources"), and at the
  // end the cause when Slurm ended it (TIMEOUT, NODE_FAIL...) with Slurm's last line.
  std::string slurm_job, slurm_state, slurm_reason, cause, cause_note;

  bool is_slurm() const { return !slurm_job.empty(); }
  nlohmann::json to_json() const;
  static Result<JobRecord> from_json(const nlohmann::json& j);
};

/// job.start's reply: the record, and whether this start found the attempt already
/// started (a re-attach) or stopped an older attempt that still ran.
struct JobStartReply {
  JobRecord record;
  bool reattached = false;
  std::optional<int> stopped_attempt;

  nlohmann::json to_json() const;
  static Result<JobStartReply> from_json(const nlohmann::json& j);
};

struct JobCancelArgs {
  static constexpr const char* kOp = "job.cancel";
  using Reply = JobRecord;
  JobRef ref;
  bool hard = false;  // SIGKILL (scancel --signal=KILL) at once, not TERM first

  nlohmann::json to_json() const;
  static Result<JobCancelArgs> from_json(const nlohmann::json& j);
};

/// The most log bytes one log.read returns.
inline constexpr int64_t kMaxLogRead = 1 << 20;

/// log.read: the job's log from `offset`, which counts every byte the job wrote,
/// so it holds across the log's rotation (base/capped_log.h).
struct LogReadArgs {
  static constexpr const char* kOp = "log.read";
  using Reply = LogReadReply;
  std::string job;
  int attempt = 0;
  int64_t offset = 0;
  int64_t max = kMaxLogRead;

  nlohmann::json to_json() const;
  static Result<LogReadArgs> from_json(const nlohmann::json& j);
};

/// Where the body's bytes start (past `dropped` bytes the log no longer holds) and
/// the log's whole size so far.
struct LogReadReply {
  int64_t offset = 0;
  int64_t size = 0;
  int64_t dropped = 0;

  nlohmann::json to_json() const;
  static Result<LogReadReply> from_json(const nlohmann::json& j);
};

}  // namespace ferry::protocol
