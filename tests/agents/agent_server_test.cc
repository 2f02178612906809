// The agent's request handler on real processes and files: detached jobs, the
// journal, attempt tokens, logs, and bad requests.
#include "agents/agent_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <future>
#include <cstdlib>
#include <thread>

#include "agents/job_journal.h"
#include "agents/lane_listener.h"
#include "base/file_lock.h"
#include "base/file_util.h"
#include "tests/support/process.h"
#include "transfer/chunk_files.h"
#include "transfer/copy_plan.h"

namespace ferry {
namespace {

using testing::TempDir;
using testing::wait_until;

// Clock ticks since boot, the unit of a process's start time in /proc/<pid>/stat.
int64_t uptime_ticks() {
  auto text = read_file("/proc/uptime");
  if (!text.ok()) return 0;
  return static_cast<int64_t>(std::strtod(text->c_str(), nullptr) * static_cast<double>(::sysconf(_SC_CLK_TCK)));
}

class AgentServerTest : public ::testing::Test {
 protected:
  Result<nlohmann::json> call(const std::string& op, nlohmann::json args, std::string* body = nullptr) {
    protocol::Frame reply = server_.handle(protocol::make_request(++id_, op, std::move(args)));
    EXPECT_EQ(reply.request_id, id_);
    if (reply.type == protocol::FrameType::kError) return protocol::status_from_error_frame(reply);
    if (body) *body = reply.body;
    return reply.header;
  }
  nlohmann::json start(const std::string& job, int attempt, const std::string& token, const std::string& cmd,
                       double timeout_s = 0) {
    auto r = call("job.start", {{"job", job}, {"attempt", attempt}, {"token", token}, {"command", cmd},
                                {"timeout_s", timeout_s}});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : nlohmann::json();
  }
  nlohmann::json wait_exit(const std::string& job, int attempt, const std::string& token) {
    nlohmann::json last;
    bool ok = wait_until(
        [&] {
          auto r = call("job.status", {{"job", job}, {"attempt", attempt}, {"token", token}});
          if (!r.ok()) return false;
          last = *r;
          return last["state"] == "exited";
        },
        std::chrono::seconds(30));
    EXPECT_TRUE(ok) << last.dump();
    return last;
  }

  TempDir dir_;
  AgentServer server_{dir_.path()};
  uint32_t id_ = 0;
};

TEST_F(AgentServerTest, HelloReportsProtocolAndWorkdir) {
  auto r = call("hello", {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)["protocol"], protocol::kProtocolVersion);
  EXPECT_EQ((*r)["workdir"], dir_.path());
}

TEST_F(AgentServerTest, RecordsRealExitCodeOutputsAndLog) {
  start("run-1.build", 1, "t1", "echo out; echo err >&2; echo key=val >> \"$FERRY_OUTPUT\"; exit 7");
  auto rec = wait_exit("run-1.build", 1, "t1");
  EXPECT_EQ(rec["exit_code"], 7);
  EXPECT_EQ(rec["outputs"]["key"], "val");
  std::string body;
  auto log = call("log.read", {{"job", "run-1.build"}, {"attempt", 1}, {"offset", 0}}, &body);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(body, "out\nerr\n");
  auto tail = call("log.read", {{"job", "run-1.build"}, {"attempt", 1}, {"offset", 4}}, &body);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(body, "err\n");
}

TEST_F(AgentServerTest, AJobPastItsLogMaxKeepsHeadAndTailAndOffsetsKeepWorking) {
  const int64_t cap = 1 << 20;
  auto r = call("job.start", {{"job", "run-1.chatty"}, {"attempt", 1}, {"token", "t"}, {"log_max", cap},
                              {"command", "seq 1 2000000"}});  // 14.9 MB of numbered lines
  ASSERT_TRUE(r.ok()) << r.status().message();
  // A follower reads from its offset the whole time, as the coordinator does.
  std::string got, body;
  int64_t offset = 0, dropped = 0;
  bool exited = false;
  ASSERT_TRUE(wait_until(
      [&] {
        for (;;) {
          auto read = call("log.read", {{"job", "run-1.chatty"}, {"attempt", 1}, {"offset", offset}}, &body);
          if (!read.ok()) return false;
          int64_t at = (*read)["offset"];
          dropped += read->value("dropped", int64_t{0});
          EXPECT_EQ(at, offset + read->value("dropped", int64_t{0}));
          got += body;
          offset = at + static_cast<int64_t>(body.size());
          if (body.empty()) break;
        }
        if (exited) return true;
        auto st = call("job.status", {{"job", "run-1.chatty"}, {"attempt", 1}, {"token", "t"}});
        exited = st.ok() && (*st)["state"] == "exited";
        return false;
      },
      std::chrono::seconds(60)));
  std::string all;
  for (int i = 1; i <= 2000000; ++i) all += std::to_string(i) + "\n";
  EXPECT_EQ(offset, static_cast<int64_t>(all.size()));
  EXPECT_EQ(static_cast<int64_t>(got.size()) + dropped, static_cast<int64_t>(all.size()));
  EXPECT_EQ(got.substr(0, cap / 2), all.substr(0, cap / 2));
  EXPECT_EQ(got.substr(got.size() - 16), all.substr(all.size() - 16));
  // On disk: within the cap, whatever the follower missed.
  int64_t on_disk = 0;
  JobPaths paths = job_paths(dir_.path(), "run-1.chatty", 1);
  DIR* d = ::opendir(paths.attempt_dir.c_str());
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    struct stat st;
    if (n.rfind("log", 0) == 0 && ::stat((paths.attempt_dir + "/" + n).c_str(), &st) == 0) on_disk += st.st_size;
  }
  ::closedir(d);
  EXPECT_LE(on_disk, cap);
  EXPECT_EQ((*call("job.status", {{"job", "run-1.chatty"}, {"attempt", 1}, {"token", "t"}}))["log_size"],
            static_cast<int64_t>(all.size()));
}

TEST_F(AgentServerTest, JobOutlivesTheAgentAndANewAgentReadsItsFate) {
  std::string release = dir_.file("release");
  start("run-1.long", 1, "tok", "while [ ! -f '" + release + "' ]; do sleep 0.05; done; exit 3");
  {
    // A second agent over the same workdir (the first "died") sees it running...
    AgentServer other(dir_.path());
    auto r = other.handle(
        protocol::make_request(1, "job.status", {{"job", "run-1.long"}, {"attempt", 1}, {"token", "tok"}}));
    EXPECT_EQ(r.header["state"], "running");
  }
  testing::write_text(release, "go");
  auto rec = wait_exit("run-1.long", 1, "tok");
  EXPECT_EQ(rec["exit_code"], 3);
}

TEST_F(AgentServerTest, StartIsIdempotentForTheSameTokenAndRefusesStaleOnes) {
  std::string counter = dir_.file("count");
  std::string cmd = "echo x >> '" + counter + "'";
  auto first = start("r.s", 2, "new", cmd);
  EXPECT_EQ(first["reattached"], false);
  wait_exit("r.s", 2, "new");
  auto again = call("job.start", {{"job", "r.s"}, {"attempt", 2}, {"token", "new"}, {"command", cmd}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)["reattached"], true);
  EXPECT_EQ(testing::read_text(counter), "x\n");  // ran once

  auto older = call("job.start", {{"job", "r.s"}, {"attempt", 1}, {"token", "old"}, {"command", cmd}});
  ASSERT_FALSE(older.ok());
  EXPECT_EQ(older.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(older.status().message().find("stale attempt token"), std::string::npos);
  auto rival = call("job.start", {{"job", "r.s"}, {"attempt", 2}, {"token", "other"}, {"command", cmd}});
  EXPECT_FALSE(rival.ok());
  auto status = call("job.status", {{"job", "r.s"}, {"attempt", 2}, {"token", "wrong"}});
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(testing::read_text(counter), "x\n");
}

// Never two attempts at once (review F6): after a coordinator gave up on a host
// (or a resume started afresh), attempt 2 of a job reaches the host while attempt
// 1 still runs there. Attempt 1 is stopped, and its end recorded, before attempt 2
// starts.
TEST_F(AgentServerTest, ANewerAttemptStopsTheOlderOneBeforeItStarts) {
  std::string pids = dir_.file("pids");
  start("r.f", 1, "one", "echo $$ >> '" + pids + "'; exec sleep 300");
  ASSERT_TRUE(wait_until([&] { return !testing::read_text(pids).empty(); }, std::chrono::seconds(10)));
  pid_t first = std::stoi(testing::read_text(pids));
  auto second = start("r.f", 2, "two", "echo $$ >> '" + pids + "'; exec sleep 300");
  EXPECT_EQ(second["stopped_attempt"], 1) << second.dump();
  // At the moment attempt 2 exists, attempt 1 is over and recorded as such.
  auto old = call("job.status", {{"job", "r.f"}, {"attempt", 1}, {"token", "one"}});
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ((*old)["state"], "exited") << old->dump();
  EXPECT_EQ((*old)["cancelled"], true);
  EXPECT_FALSE(testing::process_running(first));
  auto r = call("job.cancel", {{"job", "r.f"}, {"attempt", 2}, {"token", "two"}, {"hard", true}});
  EXPECT_TRUE(r.ok());
  wait_exit("r.f", 2, "two");
}

// Newcomer report U8: a retry after a failed attempt printed "attempt 1 was still
// running ...; stopped it", because the reply named the older attempt whether or
// not it ran. Only an attempt that was still running is named.
TEST_F(AgentServerTest, AnOlderAttemptThatHadEndedIsNotReportedAsStopped) {
  start("r.d", 1, "one", "exit 75");
  EXPECT_EQ(wait_exit("r.d", 1, "one")["exit_code"], 75);
  auto second = start("r.d", 2, "two", "true");
  EXPECT_FALSE(second.contains("stopped_attempt")) << second.dump();
  EXPECT_EQ(wait_exit("r.d", 2, "two")["exit_code"], 0);
}

// Review F6: a trainer that calls setsid() (or daemonizes) leaves the process
// group the fence kills. Each attempt gets a cgroup of its own where the host
// lets the agent make one, else its supervisor adopts what leaves the group
// (adopted_processes.h); stopping the attempt kills all of it either way.
class EscapedProcessTest : public AgentServerTest {
 protected:
  // Starts an attempt whose shell leaves a `sleep` in a new session behind it and
  // returns that sleep's pid, once it runs outside the job's process group.
  pid_t start_with_escapee(const std::string& job, int attempt, const std::string& token, double timeout_s = 0) {
    std::string file = dir_.file(job + "-" + std::to_string(attempt) + ".escaped");
    auto reply = start(job, attempt, token,
                       "setsid sh -c 'echo $$ > \"" + file + "\"; exec sleep 300' & exec sleep 300", timeout_s);
    const std::string by = reply.value("contained_by", "");
    if (by != "cgroup" && by != "supervisor") {
      skip_reason_ = "NO CGROUP ON THIS HOST: a job that calls setsid() survives a fence here (" +
                     reply.value("containment_note", std::string("?")) + ")";
      return 0;
    }
    EXPECT_TRUE(wait_until([&] { return !testing::read_text(file).empty(); }, std::chrono::seconds(10)));
    pid_t escaped = std::atoi(testing::read_text(file).c_str());
    EXPECT_TRUE(testing::process_running(escaped));
    EXPECT_NE(::getpgid(escaped), reply.value("pid", 0)) << "the sleep must have left the job's group";
    return escaped;
  }
  std::string skip_reason_;
};

TEST_F(EscapedProcessTest, ANewerAttemptLeavesNoProcessOfTheOldOneAlive) {
  pid_t escaped = start_with_escapee("r.e", 1, "one");
  if (escaped == 0) GTEST_SKIP() << skip_reason_;
  ASSERT_GT(escaped, 1);
  auto second = start("r.e", 2, "two", "exec sleep 300");
  EXPECT_EQ(second["stopped_attempt"], 1) << second.dump();
  EXPECT_FALSE(testing::process_running(escaped)) << "pid " << escaped << " of attempt 1 outlived the fence";
  auto r = call("job.cancel", {{"job", "r.e"}, {"attempt", 2}, {"token", "two"}, {"hard", true}});
  EXPECT_TRUE(r.ok());
  wait_exit("r.e", 2, "two");
}

TEST_F(EscapedProcessTest, ACancelLeavesNoProcessOfTheAttemptAlive) {
  pid_t escaped = start_with_escapee("r.c", 1, "one");
  if (escaped == 0) GTEST_SKIP() << skip_reason_;
  ASSERT_GT(escaped, 1);
  auto r = call("job.cancel", {{"job", "r.c"}, {"attempt", 1}, {"token", "one"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto done = wait_exit("r.c", 1, "one");
  EXPECT_EQ(done["cancelled"], true) << done.dump();
  EXPECT_FALSE(testing::process_running(escaped)) << "pid " << escaped << " outlived the cancel";
}

TEST_F(EscapedProcessTest, ATimeoutLeavesNoProcessOfTheAttemptAlive) {
  pid_t escaped = start_with_escapee("r.t", 1, "one", /*timeout_s=*/3);
  if (escaped == 0) GTEST_SKIP() << skip_reason_;
  ASSERT_GT(escaped, 1);
  auto done = wait_exit("r.t", 1, "one");
  EXPECT_EQ(done["timed_out"], true) << done.dump();
  EXPECT_FALSE(testing::process_running(escaped)) << "pid " << escaped << " outlived the timeout";
}

// Review F6: job.start waited forever for a start of the same job stuck on the
// host; now it answers unavailable (the coordinator retries) after a deadline.
TEST_F(AgentServerTest, AStartStuckOnTheJobLockGivesUpAfterItsDeadline) {
  JobPaths paths = job_paths(dir_.path(), "r.l", 1);
  ASSERT_TRUE(make_dirs(paths.job_dir).ok());
  auto held = FileLock::take(paths.lock());
  ASSERT_TRUE(held.ok()) << held.status().message();
  server_.set_start_lock_wait_ms(300);
  auto answer = std::async(std::launch::async, [&] {
    return call("job.start", {{"job", "r.l"}, {"attempt", 1}, {"token", "one"}, {"command", "true"}});
  });
  bool answered = answer.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  *held = FileLock();  // lets a start that ignores its deadline finish, so the test ends
  ASSERT_TRUE(answered) << "job.start still waits on " << paths.lock();
  auto r = answer.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().message();
  EXPECT_NE(r.status().message().find(paths.lock()), std::string::npos) << r.status().message();
}

// The first frame that is not an event from `fd` within `ms`; a default Frame if none.
protocol::Frame next_answer(int fd, protocol::FrameDecoder& d, int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    auto f = d.next();
    if (f.ok() && f->has_value() && (*f)->type != protocol::FrameType::kEvent) return std::move(**f);
    if (f.ok() && f->has_value()) continue;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return protocol::Frame();
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return protocol::Frame();
    d.feed(buf, static_cast<size_t>(n));
  }
}

// Review P5 (a): the agent took lanes up only between requests, so a job.start waiting
// on its job's lock (up to 30 s; a slow sbatch or an older Slurm attempt's fence alike)
// left a new lane unserved until the coordinator dropped it as silent. Lanes are now
// accepted on a thread of their own: the lane's hello comes while the start still waits.
TEST_F(AgentServerTest, ALaneConnectingDuringABlockedStartIsServed) {
  JobPaths paths = job_paths(dir_.path(), "r.lane", 1);
  ASSERT_TRUE(make_dirs(paths.job_dir).ok());
  auto held = FileLock::take(paths.lock());
  ASSERT_TRUE(held.ok()) << held.status().message();
  LaneListener lanes;
  const std::string sock = dir_.file("run/lanes.sock");
  ASSERT_TRUE(lanes.listen(sock).ok());
  // The event that the start waits: the agent opens the lock file to take it.
  int watch = ::inotify_init1(IN_CLOEXEC);
  ASSERT_GE(watch, 0);
  ASSERT_GE(::inotify_add_watch(watch, paths.lock().c_str(), IN_OPEN), 0);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  server_.set_start_lock_wait_ms(20000);
  std::thread agent([&] { server_.serve(sv[0], sv[0], 60, &lanes); });
  std::string start = protocol::encode_frame(
      protocol::make_request(1, "job.start", {{"job", "r.lane"}, {"attempt", 1}, {"token", "t"}, {"command", "true"}}));
  ASSERT_EQ(write(sv[1], start.data(), start.size()), static_cast<ssize_t>(start.size()));
  pollfd opened{watch, POLLIN, 0};
  ASSERT_EQ(::poll(&opened, 1, 10000), 1) << "job.start never reached " << paths.lock();

  int lane = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock.c_str());
  ASSERT_EQ(::connect(lane, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  std::string hello = protocol::encode_frame(protocol::make_request(7, "hello"));
  ASSERT_EQ(write(lane, hello.data(), hello.size()), static_cast<ssize_t>(hello.size()));
  protocol::FrameDecoder lane_in, main_in;
  const auto asked = std::chrono::steady_clock::now();
  protocol::Frame lane_hello = next_answer(lane, lane_in, 5000);
  const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  EXPECT_EQ(lane_hello.type, protocol::FrameType::kReply) << "no lane hello within 5 s while job.start waited (20 s)";
  EXPECT_EQ(lane_hello.request_id, 7u);
  EXPECT_LT(waited_s, 5.0);
  pollfd main_out{sv[1], POLLIN, 0};
  EXPECT_EQ(::poll(&main_out, 1, 0), 0) << "job.start answered before its lock was let go: it never waited";

  *held = FileLock();  // the start goes on, and is answered in its turn
  protocol::Frame started = next_answer(sv[1], main_in, 15000);
  EXPECT_EQ(started.type, protocol::FrameType::kReply) << started.header.dump();
  EXPECT_EQ(started.request_id, 1u);
  ::shutdown(sv[1], SHUT_WR);
  agent.join();
  wait_exit("r.lane", 1, "t");
  for (int fd : {lane, watch, sv[0], sv[1]}) ::close(fd);
}

// One job.start never launches two processes (review F6): two agents on one
// workdir (a coordinator that lost the link mid-start sent the start again
// through a second agent) start the same attempt at the same moment.
TEST_F(AgentServerTest, TwoAgentsStartingOneAttemptAtOnceLaunchItOnce) {
  for (int round = 0; round < 10; ++round) {
    std::string counter = dir_.file("count" + std::to_string(round));
    std::string job = "r.d" + std::to_string(round);
    nlohmann::json args = {{"job", job}, {"attempt", 1}, {"token", "t"}, {"command", "echo x >> '" + counter + "'"}};
    protocol::Frame a, b;
    std::thread other([&] {
      AgentServer second(dir_.path());
      b = second.handle(protocol::make_request(1, "job.start", args));
    });
    a = server_.handle(protocol::make_request(1, "job.start", args));
    other.join();
    ASSERT_EQ(a.type, protocol::FrameType::kReply) << a.header.dump();
    ASSERT_EQ(b.type, protocol::FrameType::kReply) << b.header.dump();
    EXPECT_NE(a.header["reattached"], b.header["reattached"]) << a.header.dump() << b.header.dump();
    wait_exit(job, 1, "t");
    EXPECT_EQ(testing::read_text(counter), "x\n") << "round " << round;
  }
}

// PID reuse (review F13): a job whose processes are gone, while their pids now
// name other processes (after a reboot, or once pids wrapped), is not running,
// and cancelling it signals nobody.
TEST_F(AgentServerTest, APidThatNowNamesAnotherProcessIsNotTheJob) {
  start("r.p", 1, "t", "exec sleep 300");
  JobPaths paths = job_paths(dir_.path(), "r.p", 1);
  auto pid_json = nlohmann::json::parse(testing::read_text(paths.pid()));
  int supervisor = pid_json["supervisor"];
  int job = pid_json["pid"];
  ::kill(supervisor, SIGKILL);
  ::kill(-job, SIGKILL);
  ASSERT_TRUE(wait_until([&] { return !testing::process_running(job) && !testing::process_running(supervisor); },
                         std::chrono::seconds(10)));
  // Start times are in clock ticks (10 ms): let the clock pass the job's, or a
  // stranger started in the same tick would carry the very start time recorded.
  int64_t recorded = std::max(pid_json.value("pid_start", int64_t{0}), pid_json.value("supervisor_start", int64_t{0}));
  ASSERT_TRUE(wait_until([&] { return uptime_ticks() > recorded + 1; }, std::chrono::seconds(10)));
  // A stranger now holds "the job's" pid: here, a process of ours written in its place.
  pid_t stranger = testing::spawn_process({"sleep", "300"}, {}, dir_.file("stranger.log"));
  ASSERT_GT(stranger, 0);
  pid_json["pid"] = stranger;
  pid_json["supervisor"] = stranger;
  ASSERT_TRUE(write_file_atomic(paths.pid(), pid_json.dump()).ok());
  auto st = call("job.status", {{"job", "r.p"}, {"attempt", 1}, {"token", "t"}});
  ASSERT_TRUE(st.ok());
  EXPECT_EQ((*st)["state"], "lost") << st->dump();
  auto c = call("job.cancel", {{"job", "r.p"}, {"attempt", 1}, {"token", "t"}, {"hard", true}});
  EXPECT_TRUE(c.ok());
  EXPECT_TRUE(testing::process_running(stranger)) << "cancel signalled a process that is not the job";
  ::kill(stranger, SIGKILL);
  testing::wait_process(stranger, 10);
}

TEST_F(AgentServerTest, TimeoutKillsTheWholeProcessGroup) {
  std::string pidfile = dir_.file("bg.pid");
  // 2 s: the job must have written its pid first, on a loaded machine too.
  start("r.t", 1, "t", "sleep 300 & echo $! > '" + pidfile + "'; sleep 300", 2);
  auto rec = wait_exit("r.t", 1, "t");
  EXPECT_EQ(rec["timed_out"], true);
  pid_t bg = std::stoi(testing::read_text(pidfile));
  EXPECT_TRUE(wait_until([&] { return !testing::process_running(bg); }, std::chrono::seconds(10)))
      << "background child " << bg << " survived the timeout";
}

// Review F15: whoever can write .ferry/bin (a shared workdir) can replace the agent
// binary; the real `ferry-agent serve` refuses such a workdir by name.
TEST(AgentServeTest, AWorkdirWhoseAgentFolderOthersCanWriteIsRefusedByName) {
  TempDir dir;
  const std::string bin = dir.file("work/.ferry/bin");
  ASSERT_TRUE(make_dirs(bin).ok());
  ASSERT_EQ(::chmod(bin.c_str(), 0777), 0);
  const std::string agent = testing::bin_dir() + "/ferry-agent";
  auto r = testing::run_process({agent, "serve", "--workdir", dir.file("work")}, {}, 30);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(bin + " is writable by group or others"), std::string::npos) << r.err;
  ASSERT_EQ(::chmod(bin.c_str(), 0755), 0);
  ASSERT_EQ(::chown(dir.file("work/.ferry").c_str(), 65534, 65534), 0) << "the test runs as root";
  r = testing::run_process({agent, "serve", "--workdir", dir.file("work")}, {}, 30);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(dir.file("work/.ferry") + " is owned by uid 65534"), std::string::npos) << r.err;
}

TEST_F(AgentServerTest, CancelMarksTheJobCancelled) {
  start("r.c", 1, "t", "sleep 300");
  auto r = call("job.cancel", {{"job", "r.c"}, {"attempt", 1}, {"token", "t"}, {"hard", false}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto rec = wait_exit("r.c", 1, "t");
  EXPECT_EQ(rec["cancelled"], true);
  EXPECT_EQ(rec["signal"], SIGTERM);
}

TEST_F(AgentServerTest, BadRequestsGetErrorsNotCrashes) {
  EXPECT_FALSE(call("no.such.op", {}).ok());
  EXPECT_FALSE(call("job.start", {{"job", "../escape"}, {"attempt", 1}, {"token", "t"}, {"command", "true"}}).ok());
  EXPECT_FALSE(call("job.start", {{"job", "ok"}, {"attempt", "one"}, {"token", "t"}, {"command", "true"}}).ok());
  EXPECT_FALSE(
      call("job.start", {{"job", "ok"}, {"attempt", 1}, {"token", "t"}, {"command", "true"}, {"timeout_s", "soon"}})
          .ok());
  EXPECT_FALSE(
      call("job.start", {{"job", "ok"}, {"attempt", 1}, {"token", "t"}, {"command", "true"}, {"env", {{"A", 1}}}})
          .ok());
  EXPECT_FALSE(call("log.read", {{"job", "ok"}, {"attempt", 1}, {"offset", -5}}).ok());
  EXPECT_FALSE(call("job.status", {{"job", "never"}, {"attempt", 1}, {"token", "t"}}).ok());
  protocol::Frame reply = server_.handle(protocol::make_reply(9, {}));
  EXPECT_EQ(reply.type, protocol::FrameType::kError);
}

// Each op's request is read exactly (protocol/ops/): a misspelt or unknown field is
// refused by name, and nothing starts, rather than the field being silently dropped.
TEST_F(AgentServerTest, AnUnknownFieldIsRefusedByNameAndNothingStarts) {
  auto start =
      call("job.start", {{"job", "r.u"}, {"attempt", 1}, {"token", "t"}, {"command", "true"}, {"timout_s", 5}});
  ASSERT_FALSE(start.ok());
  EXPECT_EQ(start.status().message(), "the job.start request's timout_s is not a known field");
  EXPECT_FALSE(path_exists(job_paths(dir_.path(), "r.u", 1).spec()));
  auto stat = call("fs.stat", {{"path", "."}, {"follow", true}});
  ASSERT_FALSE(stat.ok());
  EXPECT_EQ(stat.status().message(), "the fs.stat request's follow is not a known field");
}

TEST_F(AgentServerTest, ServeAnswersAGarbageStreamWithAnErrorAndCloses) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::string good = protocol::encode_frame(protocol::make_request(1, "ping"));
  std::string garbage = "\xff\xff\xff\x7fjunkjunkjunk";
  std::string all = good + garbage;
  ASSERT_EQ(write(sv[1], all.data(), all.size()), static_cast<ssize_t>(all.size()));
  int code = server_.serve(sv[0], sv[0], 10);
  EXPECT_EQ(code, 2);
  char buf[4096];
  ssize_t n = read(sv[1], buf, sizeof buf);
  ASSERT_GT(n, 0);
  protocol::FrameDecoder d;
  d.feed(buf, static_cast<size_t>(n));
  auto pong = d.next();
  ASSERT_TRUE(pong.ok() && pong->has_value());
  EXPECT_EQ((*pong)->type, protocol::FrameType::kReply);
  auto err = d.next();
  ASSERT_TRUE(err.ok() && err->has_value());
  EXPECT_EQ((*err)->type, protocol::FrameType::kError);
  close(sv[0]);
  close(sv[1]);
}

// The serve loop end to end with chunk-sized frames: a body read in place on the
// way in, a reply body written beside its prefix on the way out.
TEST_F(AgentServerTest, ServeWritesAndReadsBackAChunkOverAStream) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::string chunk(1536 * 1024 + 5, '\0');
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>((i * 131) >> 3);
  ASSERT_TRUE(write_file_atomic(dir_.path() + "/src.bin", chunk).ok());
  std::string hash;
  ASSERT_TRUE(read_chunk(dir_.path() + "/src.bin", 0, static_cast<int64_t>(chunk.size()), &hash).ok());
  int64_t size = static_cast<int64_t>(chunk.size());
  std::string in =
      protocol::encode_frame(protocol::make_request(
          1, "recv.begin", {{"dest", "out.bin"}, {"size", size}, {"chunk_size", 2 << 20}, {"mode", 0644}})) +
      protocol::encode_frame(protocol::make_request(
          2, "recv.write", {{"dest", "out.bin"}, {"index", 0}, {"chunk_size", 2 << 20}, {"hash", hash}}, chunk)) +
      protocol::encode_frame(
          protocol::make_request(3, "fs.read", {{"path", "src.bin"}, {"offset", 0}, {"length", size}}));
  std::thread server([&] {
    server_.serve(sv[0], sv[0], 10);
    close(sv[0]);  // our end of the stream sees EOF
  });
  size_t off = 0;
  while (off < in.size()) {
    ssize_t n = write(sv[1], in.data() + off, in.size() - off);
    ASSERT_GT(n, 0);
    off += static_cast<size_t>(n);
  }
  shutdown(sv[1], SHUT_WR);  // EOF ends serve() once it has answered everything
  protocol::FrameDecoder d;
  std::vector<protocol::Frame> replies;
  char buf[65536];
  for (;;) {
    ssize_t n = read(sv[1], buf, sizeof buf);
    if (n <= 0) break;
    d.feed(buf, static_cast<size_t>(n));
    for (;;) {
      auto f = d.next();
      ASSERT_TRUE(f.ok());
      if (!f->has_value()) break;
      if ((*f)->type != protocol::FrameType::kEvent) replies.push_back(std::move(**f));
    }
  }
  server.join();
  close(sv[1]);
  ASSERT_EQ(replies.size(), 3u);
  for (const auto& r : replies) EXPECT_EQ(r.type, protocol::FrameType::kReply) << r.header.dump();
  EXPECT_EQ(replies[2].header["hash"], hash);
  EXPECT_EQ(replies[2].body, chunk);
  auto part = read_file(dir_.path() + "/out.bin.ferry-part");
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(*part, chunk);
}

// A client of serve() over a socket pair, one request at a time, frames as the
// coordinator sends them (prefix, then body).
class StreamClient {
 public:
  explicit StreamClient(AgentServer& server) {
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv_), 0);
    thread_ = std::thread([this, &server] {
      server.serve(sv_[0], sv_[0], 60);
      close(sv_[0]);
    });
  }
  ~StreamClient() {
    shutdown(sv_[1], SHUT_WR);
    thread_.join();
    close(sv_[1]);
  }
  // The reply, or the stream's failure (a frame the decoder refused, a hang-up).
  Result<protocol::Frame> call(const std::string& op, nlohmann::json args, std::string body = {}) {
    protocol::Frame f = protocol::make_request(++id_, op, std::move(args), std::move(body));
    std::string bytes = protocol::encode_frame(f);
    for (size_t off = 0; off < bytes.size();) {
      ssize_t n = write(sv_[1], bytes.data() + off, bytes.size() - off);
      if (n <= 0) return unavailable("the agent hung up");
      off += static_cast<size_t>(n);
    }
    char buf[1 << 16];
    for (;;) {
      auto next = decoder_.next();
      if (!next.ok()) return next.status();
      if (next->has_value()) {
        if ((*next)->type == protocol::FrameType::kEvent) continue;
        return std::move(**next);
      }
      ssize_t n = read(sv_[1], buf, sizeof buf);
      if (n <= 0) return unavailable("the agent hung up");
      decoder_.feed(buf, static_cast<size_t>(n));
    }
  }

 private:
  int sv_[2] = {-1, -1};
  std::thread thread_;
  protocol::FrameDecoder decoder_;
  uint32_t id_ = 0;
};

// Review F4: the chunk lists of a large file rode in the 1 MiB JSON header, so a
// file of ≥ ~48 GiB could not be hashed or resumed and one of ≥ ~58.5 GiB never
// committed. 33,000 chunks are a 64.5 GiB file in the copy's 2 MiB chunks; here
// they are 4 KiB each, so the same frames cross with 129 MiB of bytes: the
// source's hashes (fs.hash), a resumed receiver's held chunks (recv.begin "have")
// and the commit's hash list (recv.commit), over the serve loop as on the wire.
TEST_F(AgentServerTest, ServeHashesResumesAndCommitsAFileOf33000Chunks) {
  constexpr int64_t kChunks = 33000, kChunkBytes = 4096, kSize = kChunks * kChunkBytes;
  std::string data(static_cast<size_t>(kSize), '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& c : data) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>(x);
  }
  ASSERT_TRUE(write_file_atomic(dir_.path() + "/src.bin", data).ok());
  StreamClient agent(server_);

  auto hashed = agent.call("fs.hash", {{"path", "src.bin"}, {"chunk_size", kChunkBytes}});
  ASSERT_TRUE(hashed.ok()) << hashed.status().message();
  ASSERT_EQ(hashed->type, protocol::FrameType::kReply) << hashed->header.dump().substr(0, 300);
  const nlohmann::json& chunks = hashed->header["chunks"];
  ASSERT_EQ(chunks.size(), static_cast<size_t>(kChunks));
  std::vector<std::string> hashes;
  for (int64_t i = 0; i < kChunks; ++i) hashes.push_back(chunks[std::to_string(i)].get<std::string>());

  nlohmann::json begin = {{"dest", "out.bin"}, {"size", kSize}, {"chunk_size", kChunkBytes}, {"mode", 0644}};
  auto fresh = agent.call("recv.begin", begin);
  ASSERT_TRUE(fresh.ok() && fresh->type == protocol::FrameType::kReply);
  EXPECT_TRUE(fresh->header["have"].empty());
  for (int64_t i = 0; i < kChunks; ++i) {
    auto w = agent.call("recv.write", {{"dest", "out.bin"}, {"index", i}, {"chunk_size", kChunkBytes},
                                       {"hash", hashes[static_cast<size_t>(i)]}},
                        data.substr(static_cast<size_t>(i * kChunkBytes), kChunkBytes));
    ASSERT_TRUE(w.ok() && w->type == protocol::FrameType::kReply) << i;
  }
  // A new attempt of the copy finds every chunk held.
  auto resumed = agent.call("recv.begin", begin);
  ASSERT_TRUE(resumed.ok()) << resumed.status().message();
  ASSERT_EQ(resumed->type, protocol::FrameType::kReply) << resumed->header.dump().substr(0, 300);
  EXPECT_EQ(resumed->header["have"], chunks);

  // As both senders build it (copy_plan.h).
  CopyFile f;
  f.roots = std::make_shared<CopyRoots>(CopyRoots{"", "out.bin", false, ""});
  f.hashes = hashes;
  std::string body;
  auto args = recv_commit_args(f, kChunkBytes, &body);
  ASSERT_TRUE(args.ok()) << args.status().message();
  auto committed = agent.call("recv.commit", *args, body);
  ASSERT_TRUE(committed.ok()) << committed.status().message();
  ASSERT_EQ(committed->type, protocol::FrameType::kReply) << committed->header.dump().substr(0, 300);
  EXPECT_EQ(committed->header["committed"], true);
  auto out = read_file(dir_.path() + "/out.bin");
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(*out == data);
}

// An operation that takes long (review F3: a commit re-hashing a huge file on slow
// storage) must not look like a dead agent: heartbeats go out while it runs. The
// operation here is an fs.read of a FIFO, whose open blocks until the test opens
// the other end, so it lasts exactly as long as the test wants.
TEST_F(AgentServerTest, ServeSendsHeartbeatsWhileAnOperationRuns) {
  std::string fifo = dir_.path() + "/slow.bin";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  std::string req = protocol::encode_frame(
      protocol::make_request(1, "fs.read", {{"path", "slow.bin"}, {"offset", 0}, {"length", 4}}));
  ASSERT_EQ(write(sv[1], req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::thread server([&] { server_.serve(sv[0], sv[0], 60); });
  // Frames as they come, for up to `deadline`: kinds in order of arrival.
  protocol::FrameDecoder d;
  std::vector<protocol::FrameType> seen;
  auto read_until = [&](protocol::FrameType want, std::chrono::seconds deadline) {
    auto until = std::chrono::steady_clock::now() + deadline;
    while (std::chrono::steady_clock::now() < until) {
      pollfd p{sv[1], POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      ssize_t n = read(sv[1], buf, sizeof buf);
      if (n <= 0) return false;
      d.feed(buf, static_cast<size_t>(n));
      for (;;) {
        auto f = d.next();
        if (!f.ok() || !f->has_value()) break;
        seen.push_back((*f)->type);
        if ((*f)->type == want) return true;
      }
    }
    return false;
  };
  // The agent's heartbeat period is 5 s; the read is still blocked in open().
  EXPECT_TRUE(read_until(protocol::FrameType::kEvent, std::chrono::seconds(15))) << "no heartbeat while busy";
  int w = ::open(fifo.c_str(), O_WRONLY);  // lets the read go on (and fail: a FIFO has no offsets)
  ASSERT_GE(w, 0);
  ::close(w);
  EXPECT_TRUE(read_until(protocol::FrameType::kError, std::chrono::seconds(15)));
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.front(), protocol::FrameType::kEvent) << "the heartbeat came before the operation ended";
  shutdown(sv[1], SHUT_WR);
  server.join();
  close(sv[0]);
  close(sv[1]);
}

}  // namespace
}  // namespace ferry
