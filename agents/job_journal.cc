#include "agents/job_journal.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "base/capped_log.h"
#include "base/file_util.h"
#include "base/json_field_writer.h"

namespace ferry {

Status check_job_name(const std::string& job) {
  if (job.empty() || job.size() > 200 || job[0] == '.') return invalid_argument("bad job name '" + job + "'");
  for (char c : job) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return invalid_argument("bad job name '" + job + "'");
  }
  if (job.find("..") != std::string::npos) return invalid_argument("bad job name '" + job + "'");
  return Status();
}

JobPaths job_paths(const std::string& workdir, const std::string& job, int attempt) {
  JobPaths p;
  p.job_dir = workdir + "/.ferry/jobs/" + job;
  p.attempt_dir = p.job_dir + "/" + std::to_string(attempt);
  return p;
}

namespace {

// Both sides of the journal's files (base/json_fields.h).
constexpr auto pid_record_fields = [](auto& v, auto& x) {
  v("pid", x.pid);
  v("supervisor", x.supervisor);
  v("started_ms", x.started_ms);
  v("pid_start", x.pid_start);
  v("supervisor_start", x.supervisor_start);
  v("boot_id", x.boot_id);
  v("cgroup", x.cgroup);
  v("cgroup_note", x.cgroup_note);
  v("subreaper", x.subreaper);
};

constexpr auto exit_record_fields = [](auto& v, auto& x) {
  v("exit_code", x.exit_code);
  v("signal", x.signal);
  v("timed_out", x.timed_out);
  v("cancelled", x.cancelled);
  v("ended_ms", x.ended_ms);
};

}  // namespace

std::string PidRecord::to_text() const { return fields_json(*this, pid_record_fields).dump(); }
Result<PidRecord> PidRecord::parse(const std::string& text, const std::string& file) {
  return parse_journal_file<PidRecord>(text, file, pid_record_fields);
}

std::string ExitRecord::to_text() const { return fields_json(*this, exit_record_fields).dump(); }
Result<ExitRecord> ExitRecord::parse(const std::string& text, const std::string& file) {
  return parse_journal_file<ExitRecord>(text, file, exit_record_fields);
}

std::map<std::string, std::string> parse_outputs(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    size_t eq = line.find('=');
    if (eq != std::string::npos && eq > 0) out[line.substr(0, eq)] = line.substr(eq + 1);
    pos = end + 1;
  }
  return out;
}

std::vector<std::string> process_stat_fields(int pid) {
  std::vector<std::string> fields;
  if (pid <= 0) return fields;
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return fields;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; fields
  // after the last ')' are plain.
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return fields;
  std::istringstream rest(stat->substr(close + 1));
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

int64_t process_start_ticks(int pid) {
  const std::vector<std::string> fields = process_stat_fields(pid);
  if (fields.size() < 20) return 0;
  const std::string& field = fields[19];  // starttime: field 22
  char* end = nullptr;
  long long ticks = std::strtoll(field.c_str(), &end, 10);
  return end && *end == '\0' && ticks > 0 ? ticks : 0;
}

std::string boot_id() {
  auto id = read_file("/proc/sys/kernel/random/boot_id");
  if (!id.ok()) return "";
  std::string s = *id;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Alive, and the very process recorded: a recorded start time (and boot) must
// match, so a reused pid reads as gone. pid 1 and below are never a job's.
static bool process_alive(int pid, int64_t recorded_start, const std::string& recorded_boot) {
  if (pid <= 1) return false;
  if (!(::kill(pid, 0) == 0 || errno == EPERM)) return false;
  if (!recorded_boot.empty() && recorded_boot != boot_id()) return false;
  if (recorded_start > 0 && process_start_ticks(pid) != recorded_start) return false;
  return true;
}

Result<bool> read_exit_record(const JobPaths& paths, JobRecord* r) {
  r->log_size = capped_log_size(paths.log());  // every byte the job wrote, kept or dropped
  auto exit_text = read_file(paths.exit());
  if (!exit_text.ok()) return false;
  auto e = ExitRecord::parse(*exit_text, paths.exit());
  if (!e.ok()) return e.status();
  r->state = JobState::kExited;
  r->exit_code = e->exit_code;
  r->signal = e->signal;
  r->timed_out = e->timed_out;
  r->cancelled = e->cancelled;
  r->ended_ms = e->ended_ms;
  auto outputs = read_file(paths.outputs());
  if (outputs.ok()) r->outputs = parse_outputs(*outputs);
  return true;
}

Result<JobRecord> read_job_record(const JobPaths& paths) {
  JobRecord r;
  auto pid_text = read_file(paths.pid());
  if (!pid_text.ok()) return not_found("no such job attempt: " + paths.attempt_dir);
  auto pid = PidRecord::parse(*pid_text, paths.pid());
  if (!pid.ok()) return pid.status();
  r.pid = pid->pid;
  r.started_ms = pid->started_ms;
  r.cgroup = pid->cgroup;
  r.contained_by = !pid->cgroup.empty() ? "cgroup" : pid->subreaper ? "supervisor" : "process group";
  r.containment_note = pid->cgroup_note;
  auto exited = read_exit_record(paths, &r);
  if (!exited.ok()) return exited.status();
  if (*exited) return r;
  // No exit record: the supervisor (or at least the job) must still be alive.
  const bool alive = process_alive(pid->supervisor, pid->supervisor_start, pid->boot_id) ||
                     process_alive(pid->pid, pid->pid_start, pid->boot_id);
  r.state = alive ? JobState::kRunning : JobState::kLost;
  return r;
}

}  // namespace ferry
