#include "agents/job_journal.h"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "base/capped_log.h"
#include "base/file_util.h"

namespace ferry {

Status check_job_name(const std::string& job) {
  if (job.empty() || job.size() > 200 || job[0] == '.') return invalid_argument("bad job name '" + job + "'");
  for (char c : job) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
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

nlohmann::json JobRecord::to_json() const {
  nlohmann::json j = {{"state", state},         {"pid", pid},         {"exit_code", exit_code},
          {"signal", signal},       {"timed_out", timed_out}, {"cancelled", cancelled},
          {"started_ms", started_ms}, {"ended_ms", ended_ms}, {"log_size", log_size},
          {"outputs", outputs}};
  if (slurm_job.empty()) {
    j["contained_by"] = cgroup.empty() ? "process group" : "cgroup";
    j["containment_note"] = cgroup_note;
  } else {
    j["slurm_job"] = slurm_job;
    j["slurm_state"] = slurm_state;
    j["slurm_reason"] = slurm_reason;
    if (!cause.empty()) j["cause"] = cause;
    if (!cause_note.empty()) j["cause_note"] = cause_note;
  }
  return j;
}

nlohmann::json parse_outputs(const std::string& text) {
  nlohmann::json out = nlohmann::json::object();
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

int64_t process_start_ticks(int pid) {
  if (pid <= 0) return 0;
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return 0;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; fields
  // after the last ')' are plain. starttime is field 22, the 20th after it.
  size_t close = stat->rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat->substr(close + 1));
  std::string field;
  for (int i = 0; i < 20 && (rest >> field); ++i) {
  }
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
  auto e = nlohmann::json::parse(*exit_text, nullptr, false);
  if (e.is_discarded()) return data_loss("corrupt " + paths.exit());
  r->state = "exited";
  r->exit_code = e.value("exit_code", -1);
  r->signal = e.value("signal", 0);
  r->timed_out = e.value("timed_out", false);
  r->cancelled = e.value("cancelled", false);
  r->ended_ms = e.value("ended_ms", int64_t{0});
  auto outputs = read_file(paths.outputs());
  if (outputs.ok()) r->outputs = parse_outputs(*outputs);
  return true;
}

Result<JobRecord> read_job_record(const JobPaths& paths) {
  JobRecord r;
  auto pid_text = read_file(paths.pid());
  if (!pid_text.ok()) return not_found("no such job attempt: " + paths.attempt_dir);
  auto pid_json = nlohmann::json::parse(*pid_text, nullptr, false);
  if (pid_json.is_discarded()) return data_loss("corrupt " + paths.pid());
  r.pid = pid_json.value("pid", 0);
  int supervisor = pid_json.value("supervisor", 0);
  std::string boot = pid_json.value("boot_id", std::string());
  r.started_ms = pid_json.value("started_ms", int64_t{0});
  if (pid_json.contains("cgroup") && pid_json["cgroup"].is_string()) r.cgroup = pid_json["cgroup"];
  if (pid_json.contains("cgroup_note") && pid_json["cgroup_note"].is_string()) r.cgroup_note = pid_json["cgroup_note"];
  auto exited = read_exit_record(paths, &r);
  if (!exited.ok()) return exited.status();
  if (*exited) return r;
  // No exit record: the supervisor (or at least the job) must still be alive.
  if (process_alive(supervisor, pid_json.value("supervisor_start", int64_t{0}), boot) ||
      process_alive(r.pid, pid_json.value("pid_start", int64_t{0}), boot)) {
    r.state = "running";
  } else {
    r.state = "lost";
  }
  return r;
}

}  // namespace ferry
