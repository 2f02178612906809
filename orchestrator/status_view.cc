#include "orchestrator/status_view.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <iomanip>
#include <sstream>

#include "base/byte_size.h"
#include "base/clock.h"
#include "base/duration_text.h"
#include "base/terminal_text.h"
#include "orchestrator/run_lock.h"

namespace ferry {
namespace {

std::string clock_time(int64_t ms) { return ms <= 0 ? "-" : local_time(ms, "%H:%M:%S"); }

const char* state_color(StageState state) {
  switch (state) {
    case StageState::kSucceeded: return "32";
    case StageState::kRunning: return "34";
    case StageState::kRetrying: return "33";
    case StageState::kFailed:
    case StageState::kTimedOut: return "31";
    case StageState::kPending:
    case StageState::kCancelled:
    case StageState::kSkipped: return "90";
  }
  return "90";
}

const char* state_color(RunState state) {
  switch (state) {
    case RunState::kSucceeded: return "32";
    case RunState::kRunning: return "34";
    case RunState::kFailed: return "31";
    case RunState::kPending:
    case RunState::kCancelled: return "90";
  }
  return "90";
}

// Width in terminal columns of UTF-8 text (τ, → are one column each).
size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string render_table(const std::vector<std::vector<std::string>>& rows, const std::vector<std::string>& colors,
                         bool color) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], columns(r[i]));
    }
  }
  std::string out;
  for (size_t row = 0; row < rows.size(); ++row) {
    std::string line;
    for (size_t i = 0; i < rows[row].size(); ++i) {
      std::string cell = rows[row][i];
      bool last = i + 1 == rows[row].size();
      std::string pad = last ? "" : std::string(width[i] - columns(cell) + 2, ' ');
      if (color && i == 1 && row > 0 && !colors[row].empty()) cell = "\033[" + colors[row] + "m" + cell + "\033[0m";
      if (color && row == 0) cell = "\033[1m" + cell + "\033[0m";
      line += cell + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string eval_progress_text(const nlohmann::json& p) {
  // Read from the store, which a host's worker wrote through: typed reads only.
  auto num = [&](const char* key) { return p.contains(key) && p[key].is_number() ? p[key].get<double>() : -1.0; };
  std::ostringstream t;
  t << std::fixed << std::setprecision(0);
  const std::string phase = p.contains("phase") && p["phase"].is_string() ? p["phase"].get<std::string>() : "eval";
  t << escape_controls(phase) << " " << num("prompts_done") << "/" << num("prompts_total") << " prompts";
  if (num("runs") > 1) t << " (run " << num("run") << " of " << num("runs") << ")";
  t << std::setprecision(1) << ", " << std::max(0.0, num("tokens_per_s")) << " tok/s";
  // After the candidate's run (the reference's, the baseline's) its τ is final, not "so far".
  if (num("tau") >= 0)
    t << std::setprecision(2) << (phase == "candidate" ? ", τ so far " : ", candidate τ ") << num("tau");
  if (num("eta_s") >= 0) t << ", ETA " << duration_text(static_cast<int64_t>(num("eta_s") * 1000));
  return t.str();
}

std::string stage_detail(const StageRecord& s) {
  std::string d;
  if (s.exit_code) d = "exit " + std::to_string(*s.exit_code);
  // "exit 3", not "exit 3: exit code 3".
  const bool error_is_exit = s.exit_code && s.error == "exit code " + std::to_string(*s.exit_code);
  if (!s.error.empty() && s.state != StageState::kSucceeded && !error_is_exit) {
    d += (d.empty() ? "" : ": ") + escape_controls(s.error);
  }
  if (s.progress.is_object() && s.progress.contains("bytes_done")) {
    std::string p = byte_size_of(s.progress.value("bytes_done", 0.0), s.progress.value("bytes_total", 0.0));
    if (s.progress.contains("rate")) p += " " + byte_size(s.progress.value("rate", 0.0)) + "/s";
    if (s.progress.contains("route")) p += " via " + s.progress.value("route", std::string());
    d += (d.empty() ? "" : "  ") + p;
  }
  if (s.progress.is_object() && s.progress.contains("slurm_job")) {
    // A Slurm job: queued with Slurm's reason, or where it runs; its id stays once it ended.
    std::string job = "slurm job " + s.progress.value("slurm_job", std::string());
    std::string st = s.progress.value("slurm_state", std::string());
    std::string reason = s.progress.value("slurm_reason", std::string());
    if (s.state == StageState::kRunning && st == "PENDING") {
      job = "queued" + (reason.empty() || reason == "None" ? "" : ": " + reason) + " (" + job + ")";
    }
    else if (s.state == StageState::kRunning && !st.empty()) job += " " + st;
    d += (d.empty() ? "" : "  ") + escape_controls(job);
  }
  if (s.state == StageState::kRunning && s.progress.is_object() && s.progress.contains("prompts_total")) {
    d += (d.empty() ? "" : "  ") + eval_progress_text(s.progress);
  }
  if (s.progress.is_object() && s.progress.contains("uncontained")) {
    // Review-4 F6: the host gave the attempt no cgroup; the full reason is in --json.
    d += std::string(d.empty() ? "" : "  ") + "not contained (setsid/daemon children outlive a stop)";
  }
  auto tau = s.metrics.find("tau");
  if (tau != s.metrics.end()) {
    std::ostringstream t;
    t << std::fixed << std::setprecision(2) << "τ=" << tau->second;
    auto ref = s.metrics.find("reference_tau");
    if (ref != s.metrics.end()) t << " (reference " << ref->second << ")";
    d += (d.empty() ? "" : "  ") + t.str();
  }
  return d;
}

}  // namespace

std::string local_time(int64_t ms, const char* format) {
  time_t t = static_cast<time_t>(ms / 1000);
  std::tm tm;
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

bool coordinator_alive(const RunRecord& run, const std::string& db_path) {
  auto held = RunLock::held(db_path, run.id, run.uid);
  if (held.has_value()) return *held;
  if (run.coordinator_pid <= 0) return false;
  return ::kill(run.coordinator_pid, 0) == 0 || errno == EPERM;
}

nlohmann::json run_to_json(const RunRecord& run, const std::vector<StageRecord>& stages, const std::string& db_path) {
  nlohmann::json j = {{"id", run.id},
                      {"uid", run.uid},
                      {"name", run.name},
                      {"workflow", run.workflow_path},
                      {"state", state_name(run.state)},
                      {"params", run.params},
                      {"created_ms", run.created_ms},
                      {"ended_ms", run.ended_ms},
                      {"error", run.error},
                      {"coordinator_pid", run.coordinator_pid},
                      {"coordinator_alive", run.state == RunState::kRunning && coordinator_alive(run, db_path)}};
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& s : stages) {
    nlohmann::json st = {{"name", s.name},
                         {"kind", s.kind},
                         {"host", s.host},
                         {"state", state_name(s.state)},
                         {"attempt", s.attempt},
                         {"job", run.job_key(s.name)},
                         {"started_ms", s.started_ms},
                         {"ended_ms", s.ended_ms},
                         {"exit_code", s.exit_code ? nlohmann::json(*s.exit_code) : nlohmann::json()},
                         {"error", s.error},
                         {"disconnected_since_ms", s.disconnected_since_ms},
                         {"progress", s.progress},
                         {"outputs", s.outputs},
                         {"metrics", s.metrics}};
    if (s.started_ms > 0) st["duration_ms"] = (s.ended_ms > 0 ? s.ended_ms : now_ms()) - s.started_ms;
    arr.push_back(st);
  }
  j["stages"] = arr;
  return j;
}

std::string render_status(const RunRecord& run, const std::vector<StageRecord>& stages, const std::string& db_path,
                          bool color) {
  std::string head = "run " + run.id + "  " + state_name(run.state);
  if (run.state == RunState::kRunning && !coordinator_alive(run, db_path)) {
    head += " (its coordinator is gone: `ferry resume " + run.id + "` picks it up)";
  }
  head += "  workflow " + run.workflow_path + "\n";
  if (run.state == RunState::kFailed && !run.error.empty()) head += escape_controls(run.error) + "\n";
  std::vector<std::vector<std::string>> rows = {{"STAGE", "STATE", "HOST", "ATTEMPT", "STARTED", "DURATION", "RESULT"}};
  std::vector<std::string> colors = {""};
  int64_t now = now_ms();
  for (const auto& s : stages) {
    std::string state = state_name(s.state);
    if (s.state == StageState::kRunning && s.disconnected_since_ms > 0) {
      state += " (disconnected " + duration_text(now - s.disconnected_since_ms) + ")";
    }
    std::string host = s.host.empty() ? (s.kind == "eval" ? "(coordinator)" : "-") : s.host;
    int64_t dur = s.started_ms > 0 ? (s.ended_ms > 0 ? s.ended_ms : now) - s.started_ms : -1;
    rows.push_back({s.name, state, host, s.attempt > 0 ? std::to_string(s.attempt) : "-", clock_time(s.started_ms),
                    duration_text(dur), stage_detail(s)});
    colors.push_back(state_color(s.state));
  }
  return head + render_table(rows, colors, color);
}

std::string render_runs(const std::vector<RunRecord>& runs, const std::string& db_path, bool color) {
  std::vector<std::vector<std::string>> rows = {{"RUN", "STATE", "CREATED", "DURATION", "WORKFLOW"}};
  std::vector<std::string> colors = {""};
  for (const auto& r : runs) {
    std::string state = state_name(r.state);
    if (r.state == RunState::kRunning && !coordinator_alive(r, db_path)) state += " (coordinator gone)";
    int64_t dur = (r.ended_ms > 0 ? r.ended_ms : now_ms()) - r.created_ms;
    rows.push_back({r.id, state, local_time(r.created_ms, "%Y-%m-%d %H:%M:%S"), duration_text(dur), r.workflow_path});
    colors.push_back(state_color(r.state));
  }
  return render_table(rows, colors, color);
}

std::string copy_progress_line(const nlohmann::json& progress, bool tty) {
  double done = progress.value("bytes_done", 0.0), total = progress.value("bytes_total", 0.0);
  double rate = progress.value("rate", 0.0);
  int pct = total > 0 ? static_cast<int>(100.0 * done / total) : 100;
  std::ostringstream line;
  if (tty) {
    int filled = std::clamp(pct, 0, 100) / 5;
    line << "[" << std::string(static_cast<size_t>(filled), '#') << std::string(static_cast<size_t>(20 - filled), '.')
         << "] ";
  }
  line << pct << "% " << byte_size_of(done, total) << ", " << byte_size(rate) << "/s";
  if (progress.contains("eta_s")) line << ", ETA " << static_cast<int>(progress.value("eta_s", 0.0)) << "s";
  line << " via " << progress.value("route", std::string("?"));
  return line.str();
}

}  // namespace ferry
