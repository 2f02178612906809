#include "agents/slurm_job.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <iterator>

#include "agents/job_shell.h"
#include "base/child_process.h"
#include "base/clock.h"
#include "base/file_util.h"
#include "base/json_field_writer.h"
#include "base/shell_quote.h"

namespace ferry {
namespace {

constexpr int64_t kMaxToolOutput = 4 << 20;
constexpr time_t kRecancelS = 30;
constexpr int64_t kSettleMs = 30 * 1000;  // after the exit record, how long to wait for Slurm's end state
constexpr int64_t kClockSlackS = 5;       // this node's clock against slurmctld's, when adopting a job

struct ToolRun {
  int rc = -1;
  std::string out, err;
};

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Runs a Slurm client with a deadline of its own: they hang for seconds when
// slurmctld is down. kFailedPrecondition when the program is not there at all.
Result<ToolRun> run_tool(const std::vector<std::string>& argv, double timeout_s) {
  ChildProcess::Options o;
  o.capture_stderr = true;
  o.own_process_group = true;
  auto child = ChildProcess::spawn(argv, o);
  if (!child.ok()) {
    return failed_precondition("this host has no Slurm client: '" + argv[0] + "' could not run (" +
                               child.status().message() +
                               "); install Slurm's client tools or put them on the "
                               "agent's PATH");
  }
  ToolRun run;
  const double until = mono_s() + timeout_s;
  char buf[65536];
  bool timed_out = false;
  for (;;) {
    double left = until - mono_s();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    auto n = (*child)->read_some(buf, sizeof buf, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (!n.ok()) break;  // closed its output: done
    if (static_cast<int64_t>(run.out.size()) < kMaxToolOutput) run.out.append(buf, *n);
  }
  int st = (*child)->finish(timed_out ? 0 : 2000);
  run.err = trim((*child)->stderr_tail());
  if (timed_out) {
    return unavailable("'" + argv[0] + "' did not answer within " + std::to_string(static_cast<int>(timeout_s)) +
                       "s (is slurmctld up?)");
  }
  run.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return run;
}

// A client's -o "%a|%b|..." output: one row of fields per line.
std::vector<std::vector<std::string>> table(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    std::string line = out.substr(pos, end - pos);
    pos = end + 1;
    std::vector<std::string> f;
    for (size_t a = 0;;) {
      size_t b = line.find('|', a);
      f.push_back(line.substr(a, b == std::string::npos ? std::string::npos : b - a));
      if (b == std::string::npos) break;
      a = b + 1;
    }
    rows.push_back(std::move(f));
  }
  return rows;
}

bool shell_name(const std::string& k) {
  if (k.empty() || std::isdigit(static_cast<unsigned char>(k[0]))) return false;
  for (char c : k) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// States in which the job may still run or start; anything else is its end.
bool active(const std::string& state) {
  for (const char* s : {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "RUNNING",
                        "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD"}) {
    if (state == s) return true;
  }
  return false;
}

// The cause a Slurm end adds to an exit code; "" for a plain end.
std::string cause_of(const std::string& state) {
  if (state.empty() || state == "COMPLETED" || state == "FAILED") return "";
  return state;
}

std::string last_line(const std::string& path) {
  auto text = read_file(path);
  if (!text.ok()) return "";
  std::string t = trim(*text);
  size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// scontrol's one-line form: "JobId=7 JobName=x ... JobState=TIMEOUT Reason=TimeLimit ...".
std::string field(const std::string& line, const std::string& key) {
  size_t at = 0;
  while ((at = line.find(key + "=", at)) != std::string::npos) {
    if (at == 0 || line[at - 1] == ' ') {
      size_t start = at + key.size() + 1;
      size_t end = line.find(' ', start);
      return line.substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
    at += key.size();
  }
  return "";
}

// Both sides of the Slurm journal's files (base/json_fields.h).
constexpr auto submission_fields = [](auto& v, auto& x) {
  v("job_id", x.job_id);
  v("name", x.name);
};

// submit.json: written before sbatch runs.
struct SubmitRecord {
  std::string name;
  int64_t submitted_ms = 0;
};
constexpr auto submit_record_fields = [](auto& v, auto& x) {
  v("name", x.name);
  v("submitted_ms", x.submitted_ms);
};

constexpr auto slurm_end_fields = [](auto& v, auto& x) {
  v("state", x.state);
  v("reason", x.reason);
};

// One of the Slurm journal's files, read loosely; kDataLoss, naming it, when it is not what it should be.
template <typename T, typename Fields>
Result<T> read_slurm_file(const std::string& file, Fields fields) {
  auto text = read_file(file);
  if (!text.ok()) return text.status();
  return parse_journal_file<T>(*text, file, fields);
}

// scancel of job `id` only while it is our job named `name`: an id that Slurm reused
// for another job, ours or another user's, is left alone (scancel then does nothing).
Result<ToolRun> scancel_ours(const std::string& id, const std::string& name) {
  return run_tool({"scancel", "--me", "--jobname=" + name, id}, SlurmQueue::kToolTimeoutS);
}

// Whether squeue's %V (submit time, "2026-12-04T13:55:43", local time) is no earlier
// than `since_ms`, give or take kClockSlackS between this node and slurmctld's.
bool submitted_since(const std::string& v, int64_t since_ms) {
  std::tm tm{};
  const char* end = ::strptime(v.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') return false;
  tm.tm_isdst = -1;
  const time_t at = std::mktime(&tm);
  return at != static_cast<time_t>(-1) && static_cast<int64_t>(at) >= since_ms / 1000 - kClockSlackS;
}

}  // namespace

Result<SlurmSubmission> read_slurm_submission(const JobPaths& paths) {
  auto s = read_slurm_file<SlurmSubmission>(paths.slurm(), submission_fields);
  if (!s.ok() && s.status().code() != StatusCode::kDataLoss)
    return not_found("the Slurm submission of " + paths.attempt_dir + " was never recorded");
  if (!s.ok()) return s.status();
  if (s->job_id.empty() || s->name.empty()) return data_loss(paths.slurm() + " names no job id or name");
  return s;
}

namespace {

Status record_end(const JobPaths& paths, const SlurmState& st) {
  return write_file_atomic(paths.slurm_end(), fields_json(st, slurm_end_fields).dump());
}

void fill_end(const JobPaths& paths, const SlurmState& st, JobRecord* r) {
  r->state = JobState::kExited;
  r->slurm_state = st.state;
  r->slurm_reason = st.reason;
  r->cause = cause_of(st.state);
  r->timed_out = st.state == "TIMEOUT";
  r->cancelled = r->cancelled || path_exists(paths.cancel());
  if (!r->cause.empty()) r->cause_note = last_line(paths.slurm_out());
}

// The command in the background, its output kept within log_max by the agent on the
// shared workdir (capped_run.h, review-4 P4); as it is, with a note, on a node that
// cannot run that agent.
std::string slurm_run_lines(const LaunchSpec& spec, const std::string& agent) {
  const std::string cmd = "\"$@\"";  // shell_choice_lines: the shell and the script
  return "__ferry_agent=" + shell_quote(agent) +
         "\n"
         "if [ -x \"$__ferry_agent\" ]; then\n"
         "  \"$__ferry_agent\" cap-log --max " +
         std::to_string(spec.log_max) + " \"$__ferry_d/log\" -- " + cmd +
         " </dev/null &\n"
         "else\n"
         "  printf 'ferry: %s cannot run on this node: this log is not kept within log_max\\n' \"$__ferry_agent\" "
         ">>\"$__ferry_d/log\"\n"
         "  " +
         cmd +
         " >>\"$__ferry_d/log\" 2>&1 </dev/null &\n"
         "fi\n";
}

}  // namespace

bool is_slurm_script_name(const std::string& name) { return name.rfind("__ferry_", 0) == 0; }

SlurmState SlurmQueue::state(const std::string& id, const std::string& name) {
  const double now = mono_s();
  auto [it, added] = jobs_.try_emplace(name);
  if (added || it->second.id != id) {
    it->second = Entry();
    it->second.id = id;
    it->second.first_asked = now;
  }
  it->second.asked = now;
  if (now >= next_poll_) refresh();
  const Entry& e = it->second;
  if (last_poll_ < e.first_asked) return {};  // no listing since the first question
  if (e.seen == last_poll_) return e.st;      // in the latest listing (or that listing failed)
  return {"GONE", ""};                        // a listing without it: Slurm forgot the job, or its id is another's now
}

void SlurmQueue::refresh() {
  const double now = mono_s();
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    it = now - it->second.asked > kForgetS ? jobs_.erase(it) : std::next(it);
  }
  if (jobs_.empty()) return;
  ++polls_;
  // All of our jobs, no one else's, and no list of names that could outgrow an argument.
  auto run = run_tool({"squeue", "--me", "-h", "-t", "all", "-o", "%i|%T|%r|%j"}, timing_.tool_timeout_s);
  // Stamped when the answer came: a listing that took long is not due again at once.
  const double done = mono_s();
  last_poll_ = done;
  if (!run.ok() || run->rc != 0) {
    // Keep what we knew: a controller down for a while is no job's end. Not gone either.
    for (auto& [name, e] : jobs_) e.seen = done;
    backoff_s_ = std::min(backoff_s_ > 0 ? 2 * backoff_s_ : 2 * timing_.poll_s, timing_.max_backoff_s);
    next_poll_ = done + backoff_s_;
    return;
  }
  backoff_s_ = 0;
  next_poll_ = done + timing_.poll_s;
  for (const auto& f : table(run->out)) {
    if (f.size() != 4) continue;
    auto it = jobs_.find(f[3]);
    if (it == jobs_.end() || it->second.id != f[0]) continue;  // a reused id is another job
    it->second.seen = done;
    it->second.st = {f[1], f[2]};
  }
}

Result<SlurmState> SlurmQueue::ask(const std::string& id, const std::string& name) {
  auto run = run_tool({"scontrol", "-o", "show", "job", id}, timing_.tool_timeout_s);
  if (!run.ok()) return run.status();
  if (run->rc != 0) {
    if (run->err.find("Invalid job id") != std::string::npos) return not_found("Slurm does not know job " + id);
    return unavailable("scontrol show job " + id + ": " + run->err);
  }
  std::string line = trim(run->out);
  if (field(line, "JobName") != name) {
    return not_found("Slurm job " + id + " is now '" + field(line, "JobName") + "', not '" + name +
                     "' (its id was reused)");
  }
  // UserId=alice(1000): ours only, whatever the name.
  const std::string user = field(line, "UserId");
  if (user.find("(" + std::to_string(::getuid()) + ")") == std::string::npos) {
    return not_found("Slurm job " + id + " belongs to " + user + ", not to us (its id was reused)");
  }
  return SlurmState{field(line, "JobState"), field(line, "Reason")};
}

bool is_slurm_attempt(const JobPaths& paths) { return path_exists(paths.submit()); }

Result<std::string> slurm_script(const JobPaths& paths, const LaunchSpec& spec, const std::string& what,
                                 const std::string& agent) {
  std::string s =
      "#!/bin/sh\n"
      "# Generated by ferry for " +
      what +
      ". Slurm runs a copy of this file, so the job's\n"
      "# folder comes as $1. exit.json there (temp + rename) is the record ferry reads.\n";
  for (const auto& [k, v] : spec.env) {
    if (!shell_name(k)) return invalid_argument("env name '" + k + "' is not a shell variable name");
    if (is_slurm_script_name(k)) return invalid_argument("env name '" + k + "' is the Slurm script's own");
    s += "export " + k + "=" + shell_quote(v) + "\n";
  }
  // The script's own state: after the stage's env, in names it may not use, and mv
  // and date by path, so no env value moves or breaks the exit record (review-4 P8).
  s += "__ferry_d=\"$1\"\n"
       "__ferry_record() {\n"
       "  printf '{\"exit_code\":%d,\"signal\":%d,\"timed_out\":false,\"cancelled\":%s,\"ended_ms\":%s}\\n' "
       "\"$1\" \"$2\" \"$3\" \"$(/bin/date +%s%3N)\" >\"$__ferry_d/exit.json.tmp\" &&\n"
       "    /bin/mv -f \"$__ferry_d/exit.json.tmp\" \"$__ferry_d/exit.json\"\n"
       "}\n"
       "__ferry_cancelled() { if [ -e \"$__ferry_d/cancel\" ]; then echo true; else echo false; fi; }\n"
       // The folder is a value (a template may have made it): one quoted word, printed by %s (review-4 P3).
       "if ! cd " +
       shell_quote(spec.cwd) +
       " 2>>\"$__ferry_d/log\"; then\n"
       "  printf 'ferry: cannot enter %s\\n' " +
       shell_quote(spec.cwd) +
       " >>\"$__ferry_d/log\"\n"
       "  __ferry_record 126 0 \"$(__ferry_cancelled)\"; exit 126\n"
       "fi\n"
       "export FERRY_OUTPUT=\"$__ferry_d/outputs\"\n";
  s += shell_choice_lines(spec.shell, spec.command, "\"$__ferry_d/log\"");
  s += slurm_run_lines(spec, agent);
  s += "__ferry_child=$!\n"
       "# scancel and the time limit TERM the whole job; pass it on and still record the end.\n"
       "trap 'kill -TERM \"$__ferry_child\" 2>/dev/null' TERM INT HUP\n"
       "wait \"$__ferry_child\"; __ferry_rc=$?\n"
       "while kill -0 \"$__ferry_child\" 2>/dev/null; do wait \"$__ferry_child\"; __ferry_rc=$?; done\n"
       "__ferry_sig=0; if [ \"$__ferry_rc\" -gt 128 ]; then __ferry_sig=$((__ferry_rc - 128)); fi\n"
       "__ferry_record \"$__ferry_rc\" \"$__ferry_sig\" \"$(__ferry_cancelled)\"\n"
       "exit \"$__ferry_rc\"\n";
  return s;
}

Result<std::string> submit_slurm_job(const JobPaths& paths, const LaunchSpec& spec, const protocol::SlurmSubmit& slurm,
                                     const std::string& name) {
  auto script = slurm_script(paths, spec, "job " + name, self_exe());
  if (!script.ok()) return script.status();
  FERRY_RETURN_IF_ERROR(write_file_atomic(paths.job_script(), *script, 0700));
  std::vector<std::string> argv = {"sbatch",
                                   "--parsable",
                                   "--job-name=" + name,
                                   "--output=" + paths.slurm_out(),
                                   "--open-mode=append",
                                   "--no-requeue",
                                   "--chdir=" + paths.attempt_dir};
  const std::pair<const char*, const std::string*> named[] = {{"partition", &slurm.partition},
                                                              {"account", &slurm.account},
                                                              {"qos", &slurm.qos},
                                                              {"mem", &slurm.mem},
                                                              {"gres", &slurm.gres}};
  for (const auto& [option, value] : named) {
    if (!value->empty()) argv.push_back("--" + std::string(option) + "=" + *value);
  }
  if (slurm.cpus > 0) argv.push_back("--cpus-per-task=" + std::to_string(slurm.cpus));
  if (slurm.time_min > 0) argv.push_back("--time=" + std::to_string(slurm.time_min));
  for (const auto& o : slurm.options) argv.push_back(o);
  argv.push_back(paths.job_script());
  argv.push_back(paths.attempt_dir);
  // Before sbatch: a submission whose answer is lost can still be found by this name.
  FERRY_RETURN_IF_ERROR(
      write_file_atomic(paths.submit(), fields_json(SubmitRecord{name, now_ms()}, submit_record_fields).dump()));
  auto run = run_tool(argv, SlurmQueue::kToolTimeoutS);
  if (!run.ok() && run.status().code() == StatusCode::kUnavailable) return run.status();  // adopted by name later
  if (!run.ok() || run->rc != 0) {
    (void)::unlink(paths.submit().c_str());  // nothing was submitted: the next start submits afresh
    if (!run.ok()) return run.status();
    return failed_precondition("sbatch refused the job: " +
                               (run->err.empty() ? "exit " + std::to_string(run->rc) : run->err));
  }
  std::string out = trim(run->out);
  std::string id = out.substr(0, out.find(';'));
  if (id.empty() || id.find_first_not_of("0123456789_") != std::string::npos) {
    return internal_error("sbatch answered '" + out.substr(0, 80) + "' instead of a job id");
  }
  Status recorded = write_file_atomic(paths.slurm(), fields_json(SlurmSubmission{id, name}, submission_fields).dump());
  if (!recorded.ok()) {
    (void)scancel_ours(id, name);  // never a job nobody can find
    (void)::unlink(paths.submit().c_str());
    return recorded;
  }
  return id;
}

Result<std::string> adopt_slurm_job(const JobPaths& paths) {
  auto submitted = read_slurm_file<SubmitRecord>(paths.submit(), submit_record_fields);
  if (!submitted.ok() && submitted.status().code() != StatusCode::kDataLoss)
    return not_found("no Slurm submission in " + paths.attempt_dir);
  if (!submitted.ok()) return submitted.status();
  const std::string name = submitted->name;
  if (name.empty()) return data_loss("corrupt " + paths.submit());
  const int64_t submitted_ms = submitted->submitted_ms;
  auto run =
      run_tool({"squeue", "--me", "-h", "-t", "all", "--name=" + name, "-o", "%i|%V"}, SlurmQueue::kToolTimeoutS);
  if (!run.ok()) return run.status();
  if (run->rc != 0) return unavailable("squeue: " + run->err);
  // Ours (--me) and submitted since submit.json: not an older job that had the same name.
  std::vector<std::string> ids;
  for (const auto& f : table(trim(run->out))) {
    if (f.size() == 2 && submitted_since(f[1], submitted_ms)) ids.push_back(f[0]);
  }
  if (ids.size() != 1 || ids[0].empty() || ids[0].find_first_not_of("0123456789_") != std::string::npos) {
    (void)::unlink(paths.submit().c_str());
    return not_found("Slurm has no job of ours named " + name + " submitted since " + std::to_string(submitted_ms));
  }
  FERRY_RETURN_IF_ERROR(
      write_file_atomic(paths.slurm(), fields_json(SlurmSubmission{ids[0], name}, submission_fields).dump()));
  return ids[0];
}

Result<JobRecord> read_slurm_record(const JobPaths& paths, SlurmQueue& queue) {
  auto sub = read_slurm_submission(paths);
  if (!sub.ok()) return sub.status();
  JobRecord r;
  r.slurm_job = sub->job_id;
  auto exited = read_exit_record(paths, &r);
  if (!exited.ok()) return exited.status();
  auto ended = read_slurm_file<SlurmState>(paths.slurm_end(), slurm_end_fields);
  if (!ended.ok() && ended.status().code() == StatusCode::kDataLoss) return ended.status();
  if (ended.ok()) {  // settled once; Slurm may have forgotten the job since
    fill_end(paths, *ended, &r);
    if (!*exited) r.state = r.cause.empty() ? JobState::kLost : JobState::kExited;
    return r;
  }
  SlurmState st = queue.state(sub->job_id, sub->name);
  bool forgotten = false;  // Slurm no longer knows the job (past MinJobAge, or lost)
  if (st.state == "GONE") {
    auto asked = queue.ask(sub->job_id, sub->name);
    forgotten = !asked.ok() && asked.status().code() == StatusCode::kNotFound;
    st = asked.ok() ? *asked : forgotten ? SlurmState{"LOST", asked.status().message()} : SlurmState{};
  }
  if (*exited) {
    // The script recorded its end; Slurm's own end says whether it ended the job (time
    // limit, cancel). Slurm settles a moment after the script: wait for the listing
    // to say so, but not past kSettleMs (a controller that does not answer).
    const bool settled = (!st.state.empty() && !active(st.state)) || now_ms() - r.ended_ms > kSettleMs;
    if (!settled) {
      r.state = JobState::kRunning;
      r.slurm_state = st.state.empty() ? "COMPLETING" : st.state;
      return r;
    }
    SlurmState end = st;
    if (forgotten || end.state.empty() || active(end.state)) end = {r.exit_code == 0 ? "COMPLETED" : "FAILED", ""};
    FERRY_RETURN_IF_ERROR(record_end(paths, end));
    fill_end(paths, end, &r);
    return r;
  }
  if (st.state.empty() || active(st.state)) {
    r.state = JobState::kRunning;
    r.slurm_state = st.state.empty() ? "SUBMITTED" : st.state;
    r.slurm_reason = st.reason;
    return r;
  }
  // Ended without an exit record (killed before its script could write one), unless it lands just now.
  exited = read_exit_record(paths, &r);
  if (!exited.ok()) return exited.status();
  if (*exited) return read_slurm_record(paths, queue);
  FERRY_RETURN_IF_ERROR(record_end(paths, st));
  fill_end(paths, st, &r);
  if (r.cause.empty()) r.cause = "LOST";  // COMPLETED or FAILED, yet its script never recorded an end
  return r;
}

Result<protocol::SlurmInfoReply> slurm_info() {
  auto run = run_tool({"sinfo", "-h", "-o", "%P|%a|%l|%D|%G"}, SlurmQueue::kToolTimeoutS);
  if (!run.ok()) return run.status();
  if (run->rc != 0) return unavailable("sinfo: " + (run->err.empty() ? "exit " + std::to_string(run->rc) : run->err));
  protocol::SlurmInfoReply info;
  for (auto f : table(run->out)) {
    if (f.size() != 5 || f[0].empty()) continue;
    bool is_default = f[0].back() == '*';
    if (is_default) f[0].pop_back();
    info.partitions.push_back({f[0], is_default, f[1], f[2], std::atoi(f[3].c_str()), f[4]});
  }
  return info;
}

Status cancel_slurm_job(const JobPaths& paths, bool hard) {
  auto sub = read_slurm_submission(paths);
  if (!sub.ok()) return sub.status();
  if (path_exists(paths.exit()) || path_exists(paths.slurm_end())) return Status();
  // The coordinator repeats a cancel on every poll until the job is gone: scancel
  // once, and again only if the job outlived kRecancelS (a scancel that got lost).
  struct stat st;
  if (::stat(paths.cancel().c_str(), &st) == 0 && ::time(nullptr) - st.st_mtime < kRecancelS) return Status();
  FERRY_RETURN_IF_ERROR(write_file_atomic(paths.cancel(), "cancel\n"));
  // Hard or not, scancel: Slurm itself sends TERM, then KILL after its KillWait, to every step.
  (void)hard;
  auto run = scancel_ours(sub->job_id, sub->name);
  if (!run.ok()) return run.status();
  if (run->rc != 0 && run->err.find("already completing or completed") == std::string::npos &&
      run->err.find("Invalid job id") == std::string::npos) {
    return unavailable("scancel " + sub->job_id + ": " + run->err);
  }
  return Status();
}

}  // namespace ferry
