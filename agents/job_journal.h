// JobJournal: the on-disk record of one detached job attempt on a host.
//
// Layout under <workdir>/.ferry/jobs/<job>/:
//   current                  "<attempt> <token>" of the newest attempt started here
//   <attempt>/spec.json      what was asked (command, env, cwd, timeout, token)
//   lock                     flock(2) held while an attempt is being started here
//   <attempt>/pid.json       {"pid","supervisor","started_ms",
//                             "pid_start","supervisor_start","boot_id"}  temp + rename
//   <attempt>/log            the job's stdout and stderr: the head, then
//   <attempt>/log.tail.<N>   the rotating tail, within log_max (capped_log.h)
//   <attempt>/outputs        key=value lines the job writes to $FERRY_OUTPUT
//   <attempt>/cancel         present once a cancel was asked for
//   <attempt>/exit.json      {"exit_code","signal","timed_out","cancelled","ended_ms"}  temp + rename
//   <attempt>/submit.json, slurm.json, job.sh, slurm.out, slurm_end.json: a Slurm job's (slurm_job.h)
// The journal outlives the agent and the coordinator: any later agent reads the
// job's real fate from it. Plain functions over files; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/json_fields.h"
#include "base/peer_json.h"
#include "base/status.h"
#include "protocol/ops/job.h"

namespace ferry {

struct JobPaths {
  std::string job_dir;      // <workdir>/.ferry/jobs/<job>
  std::string attempt_dir;  // job_dir/<attempt>
  std::string current() const { return job_dir + "/current"; }
  std::string lock() const { return job_dir + "/lock"; }
  std::string spec() const { return attempt_dir + "/spec.json"; }
  std::string pid() const { return attempt_dir + "/pid.json"; }
  std::string log() const { return attempt_dir + "/log"; }
  std::string outputs() const { return attempt_dir + "/outputs"; }
  std::string cancel() const { return attempt_dir + "/cancel"; }
  std::string exit() const { return attempt_dir + "/exit.json"; }
  // Slurm attempts only (slurm_job.h).
  std::string job_script() const { return attempt_dir + "/job.sh"; }
  std::string submit() const { return attempt_dir + "/submit.json"; }
  std::string slurm() const { return attempt_dir + "/slurm.json"; }
  std::string slurm_out() const { return attempt_dir + "/slurm.out"; }
  std::string slurm_end() const { return attempt_dir + "/slurm_end.json"; }
};

/// Refuses job names that could escape the jobs folder.
Status check_job_name(const std::string& job);
JobPaths job_paths(const std::string& workdir, const std::string& job, int attempt);

// The record the agent answers job.status with (protocol/ops/job.h).
using protocol::JobRecord;
using protocol::JobState;

/// pid.json: the job and its supervisor, written once the job started.
struct PidRecord {
  int pid = 0;
  int supervisor = 0;
  int64_t started_ms = 0;
  int64_t pid_start = 0;  // process_start_ticks: tells the process from a later one with its pid
  int64_t supervisor_start = 0;
  std::string boot_id;
  std::string cgroup;       // the attempt's cgroup folder, "" when it has none
  std::string cgroup_note;  // why it has none (job_cgroup.h)
  /// The supervisor adopts what leaves the job's process group (adopted_processes.h);
  /// false in a record an older agent wrote.
  bool subreaper = false;

  std::string to_text() const;
  /// Read loosely (an older agent may have written it); `file` names it in errors.
  static Result<PidRecord> parse(const std::string& text, const std::string& file);
};

/// exit.json: how the job ended, written once by its supervisor (or a Slurm job's script).
struct ExitRecord {
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  bool cancelled = false;
  int64_t ended_ms = 0;

  std::string to_text() const;
  static Result<ExitRecord> parse(const std::string& text, const std::string& file);
};

/// One of the journal's JSON files through its field list (base/json_fields.h), read
/// loosely, as an older agent may have written it; kDataLoss naming `file` when it
/// is not JSON or holds a field of the wrong type.
template <typename T, typename Fields>
Result<T> parse_journal_file(const std::string& text, const std::string& file, Fields fields) {
  auto j = parse_peer_json(text, file);
  if (!j.ok()) return data_loss("corrupt " + file);
  auto x = fields_from_json<T>(*j, file, fields);
  if (!x.ok()) return data_loss("corrupt " + x.status().message());
  return x;
}

Result<JobRecord> read_job_record(const JobPaths& paths);
/// Fills `r` from exit.json (and the log's size, the outputs); false when there is none yet.
Result<bool> read_exit_record(const JobPaths& paths, JobRecord* r);

/// The fields of /proc/PID/stat after the command name: [0] is the state (field 3),
/// [1] the parent's pid; empty when the process is gone.
std::vector<std::string> process_stat_fields(int pid);
/// When a process started, in clock ticks since boot (/proc/PID/stat, field 22):
/// with the boot's id, what tells a process from a later one that got its pid
/// (after a reboot, or once the pid space wrapped). 0 when it is gone.
int64_t process_start_ticks(int pid);
/// This boot's id (/proc/sys/kernel/random/boot_id); "" when unknown.
std::string boot_id();

/// Parses `key=value` lines; later keys win; lines without '=' are ignored.
std::map<std::string, std::string> parse_outputs(const std::string& text);

}  // namespace ferry
