// End to end on local hosts: the real `ferry` binary, real agents as
// subprocesses, real detached processes, a real SQLite file.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::exists;
using testing::read_text;
using testing::wait_until;
using testing::write_text;

class LocalRunTest : public testing::FerryHomeTest {
 protected:
  // Stages that leave a relay's links idle: `put` copies work_'s payload onto host a,
  // `ship` relays it to host b over 4 streams, then `wait` runs on a until `release` exists.
  std::string relay_then_wait(const std::string& release) {
    return "  put:\n    host: a\n    run: cp " + work_.file("payload") +
           " payload\n"
           "  ship:\n    kind: copy\n    needs: put\n    from: a:payload\n    to: b:payload\n"
           "    route: relay\n    streams: 4\n"
           "  wait:\n    host: a\n    needs: ship\n    run: |\n      echo waiting\n"
           "      while [ ! -f " +
           release + " ]; do sleep 0.1; done\n";
  }
  int count_events(const std::string& run, const std::string& stage_name, const std::string& type) {
    auto r = testing::run_process({"sqlite3", "-cmd", ".timeout 10000", home_.file("ferry.db"),
                                   "SELECT count(*) FROM events WHERE run_id='" + run + "' AND stage='" + stage_name +
                                       "' AND type='" + type + "'"});
    return std::atoi(r.out.c_str());
  }
};

TEST_F(LocalRunTest, HelloExampleRunsEndToEnd) {
  auto r = ferry({"run", std::string(FERRY_SOURCE_DIR) + "/examples/hello/workflow.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = status("hello-1");
  EXPECT_EQ(st["state"], "succeeded");
  ASSERT_EQ(st["stages"].size(), 3u);
  for (const auto& s : st["stages"]) {
    EXPECT_EQ(s["state"], "succeeded") << s.dump();
    EXPECT_EQ(s["exit_code"], 0) << s.dump();
  }
  EXPECT_EQ(stage(st, "flaky")["attempt"], 2);  // failed once with 75, retried
  auto logs = ferry({"logs", "hello-1", "report"});
  EXPECT_EQ(logs.exit_code, 0);
  EXPECT_NE(logs.out.find("alpha said: hello from ferry"), std::string::npos) << logs.out;
  auto first = ferry({"logs", "hello-1", "flaky", "--attempt", "1"});
  EXPECT_NE(first.out.find("not yet"), std::string::npos) << first.out;
  auto table = ferry({"status", "hello-1"});
  EXPECT_NE(table.out.find("prepare"), std::string::npos);
  EXPECT_EQ(table.out.find("\033["), std::string::npos) << "colour without a TTY";
}

TEST_F(LocalRunTest, RetriesUntilSuccessAndRecordsEveryAttempt) {
  auto wf = write_workflow(R"(name: retry
stages:
  flaky:
    run: |
      n=$(cat n 2>/dev/null || echo 0); n=$((n+1)); echo $n > n
      [ "$n" -ge 3 ] || exit 75
    retries: 2
    retry_backoff: 10ms
)");
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = stage(status("retry-1"), "flaky");
  EXPECT_EQ(st["state"], "succeeded");
  EXPECT_EQ(st["attempt"], 3);
  EXPECT_EQ(count_events("retry-1", "flaky", "attempt.started"), 3);
  EXPECT_EQ(count_events("retry-1", "flaky", "attempt.finished"), 3);
}

// Newcomer report U8: examples/hello's retry printed "attempt 1 was still running on
// beta; stopped it before starting attempt 2" after attempt 1 had failed and ended.
TEST_F(LocalRunTest, ARetryAfterAnEndedAttemptDoesNotSayItWasStillRunning) {
  auto r = ferry({"run", std::string(FERRY_SOURCE_DIR) + "/examples/hello/workflow.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(stage(status("hello-1"), "flaky")["attempt"], 2);
  EXPECT_EQ((r.out + r.err).find("was still running"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(count_events("hello-1", "flaky", "attempt.stopped_older"), 0);
}

TEST_F(LocalRunTest, RetryOnLimitsRetriesToTheListedExitCodes) {
  auto wf = write_workflow(R"(name: retryon
stages:
  broken:
    run: exit 3
    retries: 5
    retry_backoff: 10ms
    retry_on: [75]
)");
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto st = stage(status("retryon-1"), "broken");
  EXPECT_EQ(st["state"], "failed");
  EXPECT_EQ(st["exit_code"], 3);
  EXPECT_EQ(st["attempt"], 1);
}

TEST_F(LocalRunTest, TimeoutKillsTheProcessGroupAndMarksTimedOut) {
  auto wf = write_workflow(R"(name: slow
stages:
  sleepy:
    run: sleep 300 & echo $! > bg.pid; sleep 300
    timeout: 3s
  after:
    needs: sleepy
    run: echo never
)");
  auto r = ferry({"run", wf, "--db", home_.file("ferry.db")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto st = status("slow-1");
  EXPECT_EQ(stage(st, "sleepy")["state"], "timed_out");
  EXPECT_EQ(stage(st, "after")["state"], "skipped");
  std::string pidfile = home_.path() + "/hosts/local/bg.pid";
  ASSERT_TRUE(exists(pidfile));
  pid_t bg = std::stoi(read_text(pidfile));
  EXPECT_TRUE(wait_until([&] { return !testing::process_running(bg); }, std::chrono::seconds(10)))
      << "orphan " << bg << " survived the timeout";
}

TEST_F(LocalRunTest, ParamsReachTheShellAsOneLiteralWord) {
  const std::string nasty = "it's \"quoted\" $(touch pwned) `touch pwned2`; echo x && exit 9\nsecond line\t*";
  auto wf = write_workflow(R"(name: quoting
params:
  v: plain
stages:
  echo:
    run: |
      printf '%s' ${{ params.v }} > out.txt
      set -- ${{ params.v }}; echo $# > argc.txt
)");
  auto r = ferry({"run", wf, "-p", "v=" + nasty});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string dir = home_.path() + "/hosts/local/";
  EXPECT_EQ(read_text(dir + "out.txt"), nasty);
  EXPECT_EQ(read_text(dir + "argc.txt"), "1\n");
  EXPECT_FALSE(exists(dir + "pwned"));
  EXPECT_FALSE(exists(dir + "pwned2"));
}

// Hygiene (review F16): what ferry keeps is the user's alone: the state database
// (params, often tokens), its folder, the coordinator's logs, and a local job's
// spec (its env). Without HOME or FERRY_HOME ferry refuses rather than use /tmp.
TEST_F(LocalRunTest, StateLogsAndJobSpecsArePrivateAndNoHomeIsRefused) {
  auto wf = write_workflow("name: private\nstages:\n  s:\n    run: echo hi\n    env: {TOKEN: secret}\n");
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto mode = [](const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? static_cast<int>(st.st_mode & 0777) : -1;
  };
  EXPECT_EQ(mode(home_.file("ferry.db")), 0600);
  EXPECT_EQ(mode(home_.path()), 0700);
  EXPECT_EQ(mode(home_.path() + "/logs/private-1/s/1.log"), 0600);
  auto r2 = ferry({"status", "private-1", "--json"});
  auto st = nlohmann::json::parse(r2.out);
  std::string key = "private-1." + st.value("uid", std::string()) + ".s";
  EXPECT_EQ(mode(home_.path() + "/hosts/local/.ferry/jobs/" + key + "/1/spec.json"), 0600);
  EXPECT_EQ(mode(home_.path() + "/hosts/local/.ferry/jobs/" + key + "/1/log"), 0600);

  auto no_home = testing::run_process({testing::bin_dir() + "/ferry", "run", wf}, {{"FERRY_HOME", ""}, {"HOME", ""}});
  EXPECT_EQ(no_home.exit_code, 2) << no_home.out << no_home.err;
  EXPECT_NE(no_home.err.find("neither FERRY_HOME nor HOME"), std::string::npos) << no_home.err;
}

// Terminal escapes from a job (review F25): on a terminal `ferry logs` shows
// them instead of obeying them (a window title here; OSC 52 could write the
// clipboard); into a pipe the log's bytes pass as they are.
TEST_F(LocalRunTest, LogsOnATerminalShowEscapesInsteadOfObeyingThem) {
  auto wf = write_workflow("name: esc\nstages:\n  s:\n    run: printf '\\033]0;owned\\007hello\\n'\n");
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto piped = ferry({"logs", "esc-1", "s"});
  EXPECT_EQ(piped.out, "\033]0;owned\007hello\n");
  // `script` gives the command a pseudo-terminal for its output.
  auto tty = testing::run_process({"script", "-qec", testing::bin_dir() + "/ferry logs esc-1 s", "/dev/null"}, env());
  EXPECT_EQ(tty.out.find("\033]"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("\\x1b]0;owned\\x07hello"), std::string::npos) << tty.out;
}

// A chatty job (review F18): the host's log and the coordinator's copy keep the
// head and the tail within log_max, with a marker between saying how much was
// dropped; `ferry logs --tail` reads only the end.
TEST_F(LocalRunTest, AJobPastTheLogCapKeepsHeadAndTail) {
  // seq 1 8000000: 62.9 MB of numbered lines, so each kept byte's place is known.
  auto wf = write_workflow("name: chatty\nstages:\n  s:\n    run: seq 1 8000000\n    log_max: 4M\n");
  auto r = ferry({"run", wf});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const int64_t cap = 4 << 20;
  // Every file of a log (its head and its tail chunks) in `dir` whose name starts with `prefix`.
  auto bytes_of = [](const std::string& dir, const std::string& prefix) {
    int64_t total = 0;
    auto ls = testing::run_process({"find", dir, "-maxdepth", "1", "-name", prefix + "*", "-printf", "%s\n"});
    std::istringstream in(ls.out);
    for (int64_t n; in >> n;) total += n;
    return total;
  };
  std::string key = "chatty-1." + status("chatty-1").value("uid", std::string()) + ".s";
  int64_t host = bytes_of(home_.path() + "/hosts/local/.ferry/jobs/" + key + "/1", "log");
  int64_t mirror = bytes_of(home_.path() + "/logs/chatty-1/s", "1.log");
  EXPECT_GT(host, cap / 2);
  EXPECT_LE(host, cap);
  EXPECT_GT(mirror, cap / 2);
  EXPECT_LE(mirror, cap);

  auto logs = ferry({"logs", "chatty-1", "s"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_EQ(logs.out.substr(0, 12), "1\n2\n3\n4\n5\n6\n");
  size_t marker = logs.out.find("bytes dropped here");
  ASSERT_NE(marker, std::string::npos);
  EXPECT_EQ(logs.out.find("bytes dropped here", marker + 1), std::string::npos) << "one gap, one marker";
  EXPECT_EQ(logs.out.substr(logs.out.size() - 24), "7999998\n7999999\n8000000\n");
  EXPECT_LE(static_cast<int64_t>(logs.out.size()), cap + 200);
  // Head + dropped + tail: all of seq's output, nothing doubled.
  size_t open = logs.out.rfind("[ferry: ", marker);
  int64_t dropped = std::stoll(logs.out.substr(open + 8));
  size_t after = logs.out.find('\n', marker) + 1;
  int64_t kept = static_cast<int64_t>(open - 1 + logs.out.size() - after);
  EXPECT_EQ(kept + dropped, 62888896);  // wc -c of seq 1 8000000

  auto tail = ferry({"logs", "chatty-1", "s", "--tail", "3"});
  ASSERT_EQ(tail.exit_code, 0) << tail.err;
  EXPECT_EQ(tail.out, "7999998\n7999999\n8000000\n");
}

TEST_F(LocalRunTest, InvalidWorkflowIsRefusedWithPlaces) {
  auto wf = write_workflow("name: bad\nstages:\n  a:\n    rnu: echo\n  b:\n    run: x\n    needs: [zz]\n");
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("wf.yaml:4:5: unknown key 'rnu'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("wf.yaml:7:13: stage 'b' needs unknown stage 'zz'"), std::string::npos) << r.err;
  auto runs = ferry({"runs", "--json"});
  EXPECT_EQ(nlohmann::json::parse(runs.out).size(), 0u) << "an invalid workflow must not create a run";
}

TEST_F(LocalRunTest, ResumeAfterSigkillReattachesAndRecordsTheExitOnce) {
  std::string release = work_.file("release");
  auto wf = write_workflow(R"(name: crash
params:
  release: ""
stages:
  first:
    run: echo ran >> first.count
  long:
    needs: first
    run: |
      echo $$ > long.pid
      echo started
      while [ ! -f ${{ params.release }} ]; do sleep 0.05; done
      echo finished
      exit 4
  never_first:
    needs: long
    run: echo should not run
)");
  std::string dir = home_.path() + "/hosts/local/";
  pid_t coordinator = testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf, "-p", "release=" + release},
                                             env(), work_.file("run.log"));
  ASSERT_GT(coordinator, 0);
  // The event: the long stage's process exists and has said so in its log.
  ASSERT_TRUE(wait_until([&] { return exists(dir + "long.pid"); }, std::chrono::seconds(30)))
      << read_text(work_.file("run.log"));
  ASSERT_TRUE(wait_until(
      [&] { return read_text(home_.path() + "/logs/crash-1/long/1.log").find("started") != std::string::npos; },
      std::chrono::seconds(30)));
  kill(coordinator, SIGKILL);
  testing::wait_process(coordinator);
  pid_t job = std::stoi(read_text(dir + "long.pid"));
  EXPECT_TRUE(testing::process_running(job)) << "the job died with its coordinator";
  auto mid = status("crash-1");
  EXPECT_EQ(mid["state"], "running");
  EXPECT_EQ(mid["coordinator_alive"], false);

  write_text(release, "go");
  auto r = ferry({"resume", "crash-1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // long exits 4: the run fails, with the real code
  auto st = status("crash-1");
  auto long_stage = stage(st, "long");
  EXPECT_EQ(long_stage["state"], "failed");
  EXPECT_EQ(long_stage["exit_code"], 4);
  EXPECT_EQ(long_stage["attempt"], 1) << "re-attached, not restarted";
  EXPECT_EQ(stage(st, "never_first")["state"], "skipped");
  EXPECT_EQ(read_text(dir + "first.count"), "ran\n") << "a succeeded stage ran again";
  EXPECT_EQ(count_events("crash-1", "long", "attempt.finished"), 1);
  EXPECT_EQ(count_events("crash-1", "long", "attempt.reattached"), 1);
  auto logs = ferry({"logs", "crash-1", "long"});
  EXPECT_EQ(logs.out, "started\nfinished\n");
}

TEST_F(LocalRunTest, CancelStopsRunningJobs) {
  auto wf = write_workflow(R"(name: cancelme
stages:
  sleepy:
    run: echo $$ > sleepy.pid; sleep 300
)");
  std::string dir = home_.path() + "/hosts/local/";
  pid_t coordinator = testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, env(), work_.file("run.log"));
  ASSERT_TRUE(wait_until([&] { return exists(dir + "sleepy.pid") && !read_text(dir + "sleepy.pid").empty(); },
                         std::chrono::seconds(30)));
  pid_t job = std::stoi(read_text(dir + "sleepy.pid"));
  auto c = ferry({"cancel", "cancelme-1"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(testing::wait_process(coordinator, 60), 130);
  EXPECT_TRUE(wait_until([&] { return !testing::process_running(job); }, std::chrono::seconds(10)));
  auto st = status("cancelme-1");
  EXPECT_EQ(st["state"], "cancelled");
  EXPECT_EQ(stage(st, "sleepy")["state"], "cancelled");
}

// Review F19: a host link with nothing to do sleeps until its next ping (every 5 s)
// instead of waking 20 times a second for as long as the run lasts. A relay's 4 streams
// leave 8 lanes and the destination's main link idle while a later stage runs on the
// source: over 2 s, only the threads of that stage's polling may be awake. The lanes
// ride their host's connection thread, so there is no thread per lane either.
TEST_F(LocalRunTest, IdleHostLinksSleepUntilTheirNextPing) {
  const std::string release = work_.file("release");
  write_text(work_.file("payload"), std::string(1 << 20, 'x'));
  auto wf = write_workflow("name: idle\nhosts:\n  a: {transport: local}\n  b: {transport: local}\nstages:\n" +
                           relay_then_wait(release));
  pid_t coordinator = testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, env(), work_.file("run.log"));
  ASSERT_TRUE(ferry.wait_for_output("idle-1", "wait", "waiting", std::chrono::seconds(60)))
      << read_text(work_.file("run.log"));
  auto switches = [&] {  // context switches per thread of the coordinator, by thread id
    std::map<std::string, long> out;
    auto ls = testing::run_process({"ls", "/proc/" + std::to_string(coordinator) + "/task"});
    std::istringstream tids(ls.out);
    for (std::string tid; tids >> tid;) {
      std::istringstream st(read_text("/proc/" + std::to_string(coordinator) + "/task/" + tid + "/status"));
      long n = 0;
      for (std::string line; std::getline(st, line);) {
        if (line.rfind("voluntary_ctxt_switches:", 0) == 0 || line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) {
          n += std::atol(line.substr(line.find(':') + 1).c_str());
        }
      }
      out[tid] = n;
    }
    return out;
  };
  const auto before = switches();
  ::usleep(2000 * 1000);  // the window measured, not a wait for an event
  const auto after = switches();
  int busy = 0;
  std::string counts;
  for (const auto& [tid, n] : after) {
    auto was = before.find(tid);
    const long woke = n - (was == before.end() ? 0 : was->second);
    counts += " " + std::to_string(woke);
    if (woke >= 10) ++busy;
  }
  // Awake: the io thread and source a's link (the stage's polls every 200 ms), a
  // helper thread or two; not b's link with its idle lanes (~40 wakes in 2 s before).
  EXPECT_LE(busy, 4) << after.size() << " threads woke:" << counts;
  EXPECT_LE(after.size(), 2u + 8u) << "the io thread, a thread per host, and a few of the libraries'";
  write_text(release, "go");
  EXPECT_EQ(testing::wait_process(coordinator, 60), 0) << read_text(work_.file("run.log"));
}

// A copy's data lanes (4 streams: 4 threads and sessions per host) close once idle for
// FERRY_LANE_IDLE_S (60 s by default; 2 s here), so a run that goes on after a copy
// does not hold them; a later copy opens them again.
TEST_F(LocalRunTest, IdleDataLanesAreClosedAndALaterCopyOpensThemAgain) {
  const std::string release = work_.file("release");
  write_text(work_.file("payload"), std::string(3 << 20, 'x'));
  auto wf = write_workflow("name: lanes\nhosts:\n  a: {transport: local}\n  b: {transport: local, workdir: " +
                           work_.file("b") + "}\nstages:\n" + relay_then_wait(release) +
                           "  again:\n    kind: copy\n    needs: wait\n    from: a:payload\n    to: b:again\n"
                           "    route: relay\n    streams: 4\n");
  auto e = env();
  e["FERRY_LANE_IDLE_S"] = "2";  // swept every 0.5 s
  pid_t coordinator = testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, e, work_.file("run.log"));
  auto threads = [&] {
    auto ls = testing::run_process({"ls", "/proc/" + std::to_string(coordinator) + "/task"});
    return static_cast<int>(std::count(ls.out.begin(), ls.out.end(), '\n'));
  };
  ASSERT_TRUE(ferry.wait_for_output("lanes-1", "wait", "waiting", std::chrono::seconds(60)))
      << read_text(work_.file("run.log"));
  // 8 lanes (4 per host) close: the coordinator ends up with at most the io thread, the
  // two hosts' main links and a few helpers.
  int now = threads();
  EXPECT_TRUE(wait_until([&] { return (now = threads()) <= 6; }, std::chrono::seconds(20))) << now << " threads still";
  write_text(release, "go");
  EXPECT_EQ(testing::wait_process(coordinator, 60), 0) << read_text(work_.file("run.log"));
  EXPECT_EQ(read_text(work_.file("b/again")).size(), size_t{3} << 20);
}

// Issue 18: run ids ("same-1") are counted per database, so two databases (a
// teammate's, or a fresh one after deleting the old) produce the same id. Their jobs
// on a shared host workdir must not be taken for attempts of one another.
class SharedHostRunTest : public LocalRunTest {
 protected:
  std::map<std::string, std::string> env_of(const testing::TempDir& home) {
    return {{"FERRY_HOME", home.path()}, {"NO_COLOR", "1"}};
  }
  testing::ProcessResult ferry_in(const testing::TempDir& home, std::vector<std::string> args) {
    args.insert(args.begin(), testing::bin_dir() + "/ferry");
    return testing::run_process(args, env_of(home));
  }
  nlohmann::json status_in(const testing::TempDir& home, const std::string& run) {
    auto r = ferry_in(home, {"status", run, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
  std::string shared_workflow(const std::string& stages) {
    return write_workflow("name: same\nhosts:\n  box: {transport: local, workdir: " + shared_.path() + "}\nstages:\n" +
                          stages);
  }
  testing::TempDir home2_;
  testing::TempDir shared_;
};

TEST_F(SharedHostRunTest, TwoStateDatabasesOneHostWorkdirBothSucceed) {
  auto wf = shared_workflow("  s:\n    host: box\n    run: echo $FERRY_RUN_ID >> runs.txt\n");
  auto first = ferry_in(home_, {"run", wf});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  auto second = ferry_in(home2_, {"run", wf});
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;

  auto a = status_in(home_, "same-1"), b = status_in(home2_, "same-1");
  EXPECT_EQ(a["state"], "succeeded");
  EXPECT_EQ(b["state"], "succeeded");
  std::string job_a = stage(a, "s")["job"], job_b = stage(b, "s")["job"];
  EXPECT_NE(job_a, job_b) << "two databases' runs share a job key on the host";
  EXPECT_NE(job_a.find("same-1."), std::string::npos) << job_a;
  // Each job folder holds its own run's one attempt, with that run's token.
  for (const auto& [home, job] : {std::make_pair(&home_, job_a), std::make_pair(&home2_, job_b)}) {
    std::string dir = shared_.path() + "/.ferry/jobs/" + job;
    EXPECT_TRUE(exists(dir + "/1/spec.json")) << dir;
    EXPECT_FALSE(exists(dir + "/2")) << dir;
    auto token = testing::run_process({"sqlite3", "-cmd", ".timeout 10000", home->file("ferry.db"),
                                       "SELECT token FROM attempts WHERE run_id='same-1' AND stage='s'"});
    EXPECT_NE(read_text(dir + "/1/spec.json").find(token.out.substr(0, token.out.find('\n'))), std::string::npos);
  }
  EXPECT_EQ(read_text(shared_.path() + "/runs.txt"), "same-1\nsame-1\n");
}

TEST_F(SharedHostRunTest, TwoCoordinatorsAtOnceOnOneHostBothSucceed) {
  // Each job marks its arrival, then waits (bounded) for the other's: both succeed
  // only if they were on the host at the same time.
  auto wf = shared_workflow(R"wf(  s:
    host: box
    run: |
      mktemp arrived.XXXXXX > /dev/null
      i=0
      while [ "$(ls arrived.* | wc -l)" -lt 2 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
      [ "$(ls arrived.* | wc -l)" -ge 2 ]
)wf");
  pid_t one = testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, env_of(home_), work_.file("one.log"));
  pid_t two = testing::spawn_process({testing::bin_dir() + "/ferry", "run", wf}, env_of(home2_), work_.file("two.log"));
  ASSERT_GT(one, 0);
  ASSERT_GT(two, 0);
  EXPECT_EQ(testing::wait_process(one, 120), 0) << read_text(work_.file("one.log"));
  EXPECT_EQ(testing::wait_process(two, 120), 0) << read_text(work_.file("two.log"));
  EXPECT_EQ(stage(status_in(home_, "same-1"), "s")["state"], "succeeded");
  EXPECT_EQ(stage(status_in(home2_, "same-1"), "s")["state"], "succeeded");
}

// A database from before run uids (schema 1) keeps the job keys its runs started
// with: `resume` re-attaches to a job under the old key "<id>.<stage>".
TEST_F(SharedHostRunTest, RunRecordedBeforeUidsResumesUnderItsOldJobKey) {
  std::string gate = work_.file("gate"), release = work_.file("release");
  auto wf = shared_workflow(R"(  gate:
    host: box
    run: test -f )" + gate + R"(
  long:
    host: box
    needs: gate
    run: |
      echo $$ > long.pid
      while [ ! -f )" + release +
                            R"( ]; do sleep 0.05; done
      exit 3
)");
  auto first = ferry_in(home_, {"run", wf});
  ASSERT_EQ(first.exit_code, 1) << "gate fails until its file exists\n" << first.out << first.err;
  // Turn the database into what ferry wrote before this change: schema 1, no uid.
  auto down = testing::run_process({"sqlite3", "-cmd", ".timeout 10000", home_.file("ferry.db"),
                                    "ALTER TABLE runs DROP COLUMN uid; PRAGMA user_version=1;"});
  ASSERT_EQ(down.exit_code, 0) << down.err;

  write_text(gate, "open");
  pid_t coordinator = testing::spawn_process({testing::bin_dir() + "/ferry", "resume", "same-1"}, env_of(home_),
                                             work_.file("resume.log"));
  ASSERT_GT(coordinator, 0);
  ASSERT_TRUE(wait_until([&] { return exists(shared_.path() + "/long.pid"); }, std::chrono::seconds(60)))
      << read_text(work_.file("resume.log"));
  kill(coordinator, SIGKILL);
  testing::wait_process(coordinator);
  EXPECT_TRUE(exists(shared_.path() + "/.ferry/jobs/same-1.long/1/spec.json")) << "not the pre-change job key";
  EXPECT_EQ(stage(status("same-1"), "long")["job"], "same-1.long");

  write_text(release, "go");
  auto r = ferry_in(home_, {"resume", "same-1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto long_stage = stage(status("same-1"), "long");
  EXPECT_EQ(long_stage["exit_code"], 3);
  EXPECT_EQ(long_stage["attempt"], 1) << "re-attached, not restarted";
  EXPECT_EQ(count_events("same-1", "long", "attempt.reattached"), 1);
  EXPECT_EQ(count_events("same-1", "long", "attempt.finished"), 1);
}

}  // namespace
}  // namespace ferry
