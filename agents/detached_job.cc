#include "agents/detached_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "agents/adopted_processes.h"
#include "agents/capped_run.h"
#include "agents/job_cgroup.h"
#include "agents/job_shell.h"
#include "base/capped_log.h"
#include "base/clock.h"
#include "base/file_util.h"
#include "base/unique_fd.h"

namespace ferry {
namespace {

// Where the supervisor keeps the job folder's start lock until pid.json is written.
constexpr int kStartLockFd = 4;
constexpr int kExitRecordTries = 10;  // a second apart
constexpr int kKillWaitMs = 5000;     // for a cgroup, or the adopted processes, to be gone
constexpr int kLogPipeBytes = 1 << 20;
constexpr size_t kLogReadBytes = 256 << 10;

void write_fd_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// Runs in the grandchild: becomes the job, its stdout and stderr on `out`. Never returns.
[[noreturn]] void exec_job(const LaunchSpec& spec, const JobPaths& paths, const std::string& cgroup, int out) {
  ::setpgid(0, 0);
  // Joined before exec (the supervisor moves us too), so every descendant is inside.
  if (!cgroup.empty()) (void)job_cgroup_join(cgroup, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGHUP, SIG_DFL);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (out < 0 || devnull < 0) _exit(126);
  ::dup2(devnull, 0);
  ::dup2(out, 1);
  ::dup2(out, 2);
  if (::chdir(spec.cwd.c_str()) != 0) {
    std::string msg = "ferry: cannot enter " + spec.cwd + ": " + std::strerror(errno) + "\n";
    write_fd_all(2, msg);
    _exit(126);
  }
  for (const auto& [k, v] : spec.env) ::setenv(k.c_str(), v.c_str(), 1);
  ::setenv("FERRY_OUTPUT", paths.outputs().c_str(), 1);
  auto shell = shell_command(spec.shell, spec.command, spec.bash);  // job.start checked it
  if (!shell.ok()) {
    write_fd_all(2, "ferry: " + shell.status().message() + "\n");
    _exit(127);
  }
  if (!shell->note.empty()) write_fd_all(2, shell->note + "\n");
  std::vector<char*> argv;
  for (std::string& word : shell->argv) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execv(argv[0], argv.data());
  std::string msg = "ferry: exec " + shell->argv[0] + " failed: " + std::strerror(errno) + "\n";
  write_fd_all(2, msg);
  _exit(127);
}

// The supervisor keeps nothing of the agent's: its pipes must close when the agent
// exits. Afterwards fd 3 reports the job's pid and kStartLockFd holds the start lock.
void leave_the_agent(const LaunchSpec& spec, int report_fd) {
  // Out of the way first, so placing one cannot close the other.
  int report = ::fcntl(report_fd, F_DUPFD_CLOEXEC, 10);
  int lock = spec.start_lock_fd >= 0 ? ::fcntl(spec.start_lock_fd, F_DUPFD_CLOEXEC, 10) : -1;
  int devnull = ::open("/dev/null", O_RDWR);
  ::dup2(devnull, 0);
  ::dup2(devnull, 1);
  ::dup2(devnull, 2);
  ::dup2(report, 3);
  // The job folder's start lock stays held (through this descriptor) until
  // pid.json is written, even if the agent that launched us dies first; the job
  // never holds it (close-on-exec).
  if (lock >= 0) {
    ::dup2(lock, kStartLockFd);
    ::fcntl(kStartLockFd, F_SETFD, FD_CLOEXEC);
  }
  for (int fd = lock >= 0 ? kStartLockFd + 1 : kStartLockFd; fd < 1024; ++fd) ::close(fd);
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGINT, SIG_IGN);
}

// The job forked, in its process group and, when the host gives one, a cgroup of
// its own, so a fence or a cancel reaches what escapes the group (setsid,
// daemons); without one, the supervisor adopts those (adopted_processes.h). The
// supervisor stays outside the cgroup: it must outlive the kill to record the
// exit. The job's output comes through the pipe in `from_job`.
pid_t fork_job(const JobPaths& paths, const LaunchSpec& spec, PidRecord* rec, UniqueFd* from_job) {
  auto made = job_cgroup_create("ferry-job-" + std::to_string(::getpid()) + "-" + std::to_string(now_ms()));
  if (made.ok()) rec->cgroup = *made;
  else rec->cgroup_note = made.status().message();
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) _exit(1);
  ::fcntl(out[0], F_SETPIPE_SZ, kLogPipeBytes);  // fewer wake-ups; the default works too
  pid_t job = ::fork();
  if (job < 0) _exit(1);
  if (job == 0) {
    ::close(3);  // the report pipe
    exec_job(spec, paths, rec->cgroup, out[1]);
  }
  ::close(out[1]);
  *from_job = UniqueFd(out[0]);
  ::setpgid(job, job);  // both sides set it, so no signal can race ahead of it
  if (!rec->cgroup.empty()) {
    Status joined = job_cgroup_join(rec->cgroup, job);
    if (!joined.ok()) {
      ::rmdir(rec->cgroup.c_str());
      rec->cgroup.clear();
      rec->cgroup_note = joined.message();
    }
  }
  rec->pid = job;
  rec->supervisor = ::getpid();
  rec->started_ms = now_ms();
  rec->pid_start = process_start_ticks(job);
  rec->supervisor_start = process_start_ticks(::getpid());
  rec->boot_id = boot_id();
  return job;
}

// Waits for the job to end, its output going into the log meanwhile, and stops it
// at its timeout (TERM, then KILL after the grace). Returns its wait status.
int follow_job(pid_t job, const LaunchSpec& spec, CappedLogWriter* log, UniqueFd* from_job, bool* timed_out) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  int sigfd = ::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  const double start = mono_s();
  double kill_at = -1;  // when the TERM grace ends
  int wstatus = 0;
  std::string buf(kLogReadBytes, '\0');
  for (;;) {
    // Adopted orphans (adopted_processes.h) are reaped here too, as they end.
    if (reap_children(job, &wstatus)) break;
    double now = mono_s();
    if (spec.timeout_s > 0 && !*timed_out && now - start >= spec.timeout_s) {
      *timed_out = true;
      ::kill(-job, SIGTERM);
      kill_at = now + spec.kill_grace_s;
    }
    if (kill_at > 0 && now >= kill_at) {
      ::kill(-job, SIGKILL);
      kill_at = -1;
    }
    // Wait for output, a child changing state or the next deadline, whichever is first.
    double wait = 3600;
    if (spec.timeout_s > 0 && !*timed_out) wait = start + spec.timeout_s - now;
    if (kill_at > 0) wait = std::min(wait, kill_at - now);
    if (wait < 0.001) wait = 0.001;
    pollfd fds[2] = {{sigfd, POLLIN, 0}, {from_job->get(), POLLIN, 0}};
    int ready = ::poll(fds, from_job->ok() ? 2 : 1, static_cast<int>(wait * 1000) + 1);
    if (ready > 0 && (fds[0].revents & POLLIN)) {
      signalfd_siginfo info;
      while (::read(sigfd, &info, sizeof info) == sizeof info) {
      }
    }
    if (ready > 0 && from_job->ok() && (fds[1].revents & (POLLIN | POLLHUP))) {
      if (!forward_log(from_job->get(), log, &buf)) from_job->reset();
    }
  }
  ::close(sigfd);
  return wstatus;
}

// What the job's pipe holds, into the log: with `blocking`, until every writer is gone.
void drain_log(UniqueFd* from_job, CappedLogWriter* log, bool blocking) {
  if (!from_job->ok()) return;
  ::fcntl(from_job->get(), F_SETFL, blocking ? 0 : O_NONBLOCK);
  std::string buf(kLogReadBytes, '\0');
  while (forward_log(from_job->get(), log, &buf)) {
  }
}

// The exit record is the job's fate for every later reader: tried again while the
// disk may come back (full, a hiccup); if it never does, the log says why the job
// will read as lost.
void record_exit(const JobPaths& paths, const ExitRecord& exit, CappedLogWriter* log) {
  Status recorded;
  for (int tries = 0; tries < kExitRecordTries; ++tries) {
    recorded = write_file_atomic(paths.exit(), exit.to_text());
    if (recorded.ok()) break;
    ::sleep(1);
  }
  if (!recorded.ok()) {
    (void)log->append("ferry: the job ended (" + exit.to_text() +
                      ") but its exit could not be recorded: " + recorded.message() + "\n");
  }
}

// Runs in the supervisor (session leader, reparented to init). Never returns.
[[noreturn]] void supervise(const JobPaths& paths, const LaunchSpec& spec, int report_fd) {
  leave_the_agent(spec, report_fd);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, nullptr);
  // The job writes into a pipe and we keep what fits log_max (capped_log.h), so a
  // chatty job cannot fill the host's disk (review F18).
  auto log = CappedLogWriter::open(paths.log(), spec.log_max);
  if (!log.ok()) _exit(1);
  PidRecord started;
  UniqueFd from_job;
  const bool adopting = adopt_orphans();  // before the job can leave an orphan
  pid_t job = fork_job(paths, spec, &started, &from_job);
  started.subreaper = adopting;
  if (!write_file_atomic(paths.pid(), started.to_text()).ok()) {
    ::kill(-job, SIGKILL);
    _exit(1);
  }
  write_fd_all(3, std::to_string(job));
  ::close(3);
  ::close(kStartLockFd);  // pid.json is durable: another agent may look at this attempt now

  ExitRecord exit;
  int wstatus = follow_job(job, spec, &*log, &from_job, &exit.timed_out);
  // What the job wrote before it ended is in the pipe already: keep all of it
  // before the exit record says the job is done.
  drain_log(&from_job, &*log, /*blocking=*/false);
  exit.cancelled = path_exists(paths.cancel());
  // A timed-out or cancelled job leaves nothing behind: in its group, its cgroup,
  // or among what it left to be adopted here (a setsid'd child, a daemon).
  if (exit.timed_out || exit.cancelled) {
    ::kill(-job, SIGKILL);
    if (!started.cgroup.empty()) (void)job_cgroup_kill(started.cgroup, kKillWaitMs);
    if (adopting) kill_adopted(kKillWaitMs);
  } else if (!started.cgroup.empty()) {
    // What the job left running (a daemon of its own) stays, in its cgroup, until
    // a newer attempt's fence; an empty cgroup goes now.
    job_cgroup_remove_if_empty(started.cgroup);
  }
  exit.ended_ms = now_ms();
  exit.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  exit.signal = WIFEXITED(wstatus) ? 0 : WTERMSIG(wstatus);
  record_exit(paths, exit, &*log);
  // What it left running is reaped by the kernel from now on, as each one ends
  // (ignored first: what has ended already is reaped here, and none in between).
  ::signal(SIGCHLD, SIG_IGN);
  int ignored = 0;
  (void)reap_children(job, &ignored);
  // A process the job left running may still write (its own daemon): its output
  // goes on into the log, as when the job wrote to the file itself, until it ends.
  drain_log(&from_job, &*log, /*blocking=*/true);
  _exit(0);
}

}  // namespace

Result<int> launch_detached(const JobPaths& paths, const LaunchSpec& spec) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return errno_status("pipe", errno);
  pid_t first = ::fork();
  if (first < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return errno_status("fork", err);
  }
  if (first == 0) {
    ::close(fds[0]);
    ::setsid();
    pid_t s = ::fork();
    if (s != 0) _exit(s < 0 ? 1 : 0);
    supervise(paths, spec, fds[1]);
  }
  ::close(fds[1]);
  int st = 0;
  while (::waitpid(first, &st, 0) < 0 && errno == EINTR) {
  }
  // The supervisor writes the job's pid once pid.json is durable, or closes the pipe on failure.
  std::string got;
  char buf[32];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (got.empty()) return internal_error("job supervisor failed to start in " + paths.attempt_dir);
  // The pid as decimal text; anything else is named, not thrown as "stoi" (review F20.9).
  char* end = nullptr;
  long pid = std::strtol(got.c_str(), &end, 10);
  if (end == got.c_str() || *end != '\0' || pid <= 1 || pid > std::numeric_limits<pid_t>::max()) {
    return internal_error("job supervisor in " + paths.attempt_dir + " answered '" + got.substr(0, 64) +
                          "' instead of the job's pid");
  }
  return static_cast<int>(pid);
}

Status signal_job(const JobPaths& paths, bool hard) {
  auto rec = read_job_record(paths);
  if (!rec.ok()) return rec.status();
  if (rec->state != JobState::kRunning) return Status();
  // kill(-1 or 0) would reach every process or our own group.
  if (rec->pid <= 1) return data_loss("job record " + paths.pid() + " names pid " + std::to_string(rec->pid));
  if (!path_exists(paths.cancel())) FERRY_RETURN_IF_ERROR(write_file_atomic(paths.cancel(), "cancel\n"));
  if (::kill(-rec->pid, hard ? SIGKILL : SIGTERM) != 0 && errno != ESRCH) return errno_status("kill", errno);
  if (hard && !rec->cgroup.empty()) return job_cgroup_kill(rec->cgroup, kKillWaitMs);
  return Status();
}

}  // namespace ferry
