// SlurmJob: an agent job started as a Slurm batch job instead of a detached
// process, for hosts with `scheduler: slurm` (the agent runs on the login node).
//
// The job folder is the same journal as a detached job's (job_journal.h), on a
// filesystem the compute nodes share. Extra files in <attempt>/:
//   job.sh          the generated batch script: env, cd, the stage's command with
//                   stdout+stderr kept in `log` within log_max (by the agent binary on
//                   the shared workdir: `ferry-agent cap-log`), then exit.json by temp + rename
//   submit.json     {"name","submitted_ms"}: written before sbatch runs, so a
//                   submission whose id was never recorded can be found by name
//   slurm.json      {"job_id","name"}: written as soon as sbatch answers
//   slurm.out       Slurm's own messages (time limit, node failure)
//   slurm_end.json  {"state","reason"}: how Slurm saw the end, asked once
// exit.json is the exit code's only source (no accounting needed); Slurm's state
// adds the cause (TIMEOUT, NODE_FAIL, PREEMPTED, OUT_OF_MEMORY, CANCELLED) and
// says whether a job killed before its script could write exit.json has ended.
//
// SlurmQueue caches one `squeue` listing for every Slurm job the agent was asked
// about, refreshed at most every kPollS whatever the number of jobs, so the
// coordinator's 200 ms status polls never reach slurmctld. Every client call is
// about our own jobs only (squeue --me, scancel --me --jobname=NAME ID, scontrol's
// UserId): jobs are matched by id, name *and* user, so an id reused after a
// controller crash, or another user's job of the same name, reads as another job.
// Call from the agent's request thread only.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/detached_job.h"
#include "agents/job_journal.h"
#include "base/status.h"
#include "protocol/ops/host.h"

namespace ferry {

/// Where a job stands in Slurm ("" state: not seen by Slurm).
struct SlurmState {
  std::string state;   // PENDING, RUNNING, COMPLETED, TIMEOUT...
  std::string reason;  // Slurm's %r: Resources, Priority, TimeLimit...
};

class SlurmQueue {
 public:
  static constexpr double kPollS = 5.0;        // at most one squeue per this long
  static constexpr double kForgetS = 60.0;     // stop listing a job nobody asked about
  static constexpr double kToolTimeoutS = 30;  // a client hangs ~9 s when slurmctld is down
  static constexpr double kMaxBackoffS = 60;   // the longest wait between listings that failed

  struct Timing {
    double poll_s = kPollS;
    double tool_timeout_s = kToolTimeoutS;
    double max_backoff_s = kMaxBackoffS;
  };
  SlurmQueue() = default;
  explicit SlurmQueue(Timing t) : timing_(t) {}

  /// The cached state of job `id` named `name`, refreshing the cache when the next listing
  /// is due (poll_s after the last one returned; after a listing failed or timed out, twice
  /// the last wait, up to max_backoff_s, so a controller that is down does not keep the
  /// agent busy): "" before a listing has seen it, "GONE" when a listing since the first
  /// question did not have it (Slurm forgot it, or the id now names another job).
  SlurmState state(const std::string& id, const std::string& name);
  /// Asks Slurm about one job now (scontrol): for a job's end and for jobs squeue no longer lists.
  /// kNotFound when Slurm does not know the id, or knows it under another name or user.
  Result<SlurmState> ask(const std::string& id, const std::string& name);
  /// How many squeue listings this object ran (tests, the bench).
  int polls() const { return polls_; }
  /// The wait the last listing set before the next one is due, in seconds (tests).
  double wait_s() const { return next_poll_ - last_poll_; }

 private:
  void refresh();
  struct Entry {
    std::string id;
    double asked = 0;        // mono_s of the last question
    double first_asked = 0;  // a listing older than this says nothing of the job
    double seen = 0;         // mono_s of the listing it was last in
    SlurmState st;
  };
  Timing timing_;
  std::map<std::string, Entry> jobs_;  // by name
  double last_poll_ = -1e9;            // when the last listing returned
  double next_poll_ = -1e9;
  double backoff_s_ = 0;  // the wait after the last failed listing; 0 after a good one
  int polls_ = 0;
};

/// The batch script of an attempt (see above); `spec.env` keys must be shell names and
/// not the script's own (is_slurm_script_name). `agent`: this agent binary's path, on the
/// shared workdir, which keeps the command's output within spec.log_max (capped_run.h).
Result<std::string> slurm_script(const JobPaths& paths, const LaunchSpec& spec, const std::string& what,
                                 const std::string& agent);

/// Names the batch script keeps its own state in (`__ferry_*`), so no stage or host
/// `env` may set them (the workflow parser refuses them too).
bool is_slurm_script_name(const std::string& name);

/// Writes job.sh and submit.json, runs sbatch with the `slurm` options, records
/// slurm.json. On refusal nothing of the submission is left: a retry submits afresh.
Result<std::string> submit_slurm_job(const JobPaths& paths, const LaunchSpec& spec, const protocol::SlurmSubmit& slurm,
                                     const std::string& name);

/// slurm.json: the job Slurm took, by id and name.
struct SlurmSubmission {
  std::string job_id;
  std::string name;
};
/// kNotFound when sbatch's answer was never recorded; kDataLoss for a corrupt file.
Result<SlurmSubmission> read_slurm_submission(const JobPaths& paths);

/// True when the attempt was handed to Slurm (submit.json exists).
bool is_slurm_attempt(const JobPaths& paths);

/// A submission without slurm.json (the agent died between sbatch and the record):
/// finds its job among ours by name, submitted no earlier than submit.json says, and
/// records it. kNotFound when Slurm has none.
Result<std::string> adopt_slurm_job(const JobPaths& paths);

/// The journal's record of a Slurm attempt: JobState::kRunning (with slurm_state and
/// slurm_reason), kExited (exit code from exit.json; cause from Slurm), or kLost.
Result<JobRecord> read_slurm_record(const JobPaths& paths, SlurmQueue& queue);

/// For `ferry hosts check`: sinfo's partitions; an error when Slurm cannot be asked.
Result<protocol::SlurmInfoReply> slurm_info();

/// Marks the attempt cancelled and runs scancel on the recorded id, only if it is still
/// our job of that name (hard or not: Slurm escalates to KILL after its KillWait).
Status cancel_slurm_job(const JobPaths& paths, bool hard);

}  // namespace ferry
