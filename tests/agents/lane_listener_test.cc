// The agent's lanes socket (agents/lane_listener.h), with the real `ferry-agent
// serve --lanes-socket`: a connection to the socket is a full agent of the same
// workdir in a process of its own, which outlives the main agent; the main agent
// removes its socket when its coordinator hangs up.
#include "agents/lane_listener.h"

#include <fcntl.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "base/file_util.h"
#include "protocol/frame.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using namespace std::chrono_literals;

// A request written to `out_fd` and its reply read from `in_fd` (events skipped); a
// request frame (not a reply) when the peer hung up. Each caller checks the type: a
// refused peer's write fails in a forked child, where an EXPECT here would only print.
protocol::Frame ask(int out_fd, int in_fd, uint32_t id, const std::string& op, nlohmann::json args) {
  std::string out = protocol::encode_frame(protocol::make_request(id, op, std::move(args)));
  if (::write(out_fd, out.data(), out.size()) != static_cast<ssize_t>(out.size())) return protocol::Frame();
  protocol::FrameDecoder d;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(in_fd, buf, sizeof buf);
    if (n <= 0) return protocol::Frame();
    d.feed(buf, static_cast<size_t>(n));
    auto f = d.next();
    if (!f.ok()) return protocol::Frame();
    if (f->has_value() && (*f)->type != protocol::FrameType::kEvent) return std::move(**f);
  }
}

int connect_unix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The real `ferry-agent serve --lanes-socket SOCK` on pipes, as sshd runs it: the test
// writes requests to to_agent[1] and reads replies from from_agent[0]; `path`, when
// set, is its PATH. Its pid, or -1.
pid_t start_main_agent(const std::string& workdir, const std::string& sock, int to_agent[2], int from_agent[2],
                       const std::string& path = "") {
  if (::pipe(to_agent) != 0 || ::pipe(from_agent) != 0) return -1;
  const std::string agent = testing::bin_dir() + "/ferry-agent";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(to_agent[0], 0);
    ::dup2(from_agent[1], 1);
    for (int fd : {to_agent[0], to_agent[1], from_agent[0], from_agent[1]}) ::close(fd);
    if (!path.empty()) ::setenv("PATH", path.c_str(), 1);
    ::execl(agent.c_str(), agent.c_str(), "serve", "--workdir", workdir.c_str(), "--lanes-socket", sock.c_str(),
            static_cast<char*>(nullptr));
    _exit(127);
  }
  ::close(to_agent[0]);
  ::close(from_agent[1]);
  return pid;
}

TEST(LaneListenerTest, ALaneIsAnAgentOfItsOwnThatOutlivesTheMainOneWhoseSocketGoes) {
  testing::TempDir dir;
  const std::string workdir = dir.file("work");
  const std::string sock = workdir + "/.ferry/run/lanes-test.sock";
  ASSERT_TRUE(make_dirs(workdir).ok());
  ASSERT_TRUE(write_file_atomic(workdir + "/data.bin", "lane bytes").ok());
  int to_agent[2], from_agent[2];
  pid_t main_pid = start_main_agent(workdir, sock, to_agent, from_agent);
  ASSERT_GE(main_pid, 0);
  // The main agent answers on its stdio, and its socket appears.
  protocol::Frame main_hello = ask(to_agent[1], from_agent[0], 1, "hello", nlohmann::json::object());
  ASSERT_EQ(main_hello.type, protocol::FrameType::kReply) << main_hello.header.dump();
  ASSERT_TRUE(testing::wait_until([&] { return testing::exists(sock); }, 10s)) << sock;
  struct stat st {};
  ASSERT_EQ(::stat(dirname_of(sock).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "the socket's folder is the user's only";

  int lane = connect_unix(sock);
  ASSERT_GE(lane, 0);
  protocol::Frame lane_hello = ask(lane, lane, 1, "hello", nlohmann::json::object());
  ASSERT_EQ(lane_hello.type, protocol::FrameType::kReply) << lane_hello.header.dump();
  EXPECT_EQ(lane_hello.header.value("workdir", ""), workdir);
  EXPECT_NE(lane_hello.header.value("pid", 0), main_hello.header.value("pid", 0)) << "a lane runs in its own process";
  protocol::Frame read = ask(lane, lane, 2, "fs.read", {{"path", "data.bin"}, {"offset", 0}, {"length", 10}});
  ASSERT_EQ(read.type, protocol::FrameType::kReply) << read.header.dump();
  EXPECT_EQ(read.body, "lane bytes");

  // The coordinator hangs up on the main agent: it exits and takes its socket along,
  // while the lane keeps serving.
  ::close(to_agent[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(main_pid, &status, 0), main_pid);
  EXPECT_FALSE(testing::exists(sock));
  protocol::Frame ping = ask(lane, lane, 3, "ping", nlohmann::json::object());
  EXPECT_EQ(ping.type, protocol::FrameType::kReply) << ping.header.dump();
  ::close(lane);
  ::close(from_agent[0]);
}

// Review P5 (a), the case: on a Slurm login node a job.start's sbatch may
// take up to 30 s (here it hangs until the test lets it go), and the real agent took
// lanes up only between requests. A copy's lane connecting meanwhile is served at once.
TEST(LaneListenerTest, ALaneIsServedWhileTheMainAgentWaitsOnAHangingSbatch) {
  testing::TempDir dir;
  const std::string workdir = dir.file("work");
  const std::string sock = workdir + "/.ferry/run/lanes-sbatch.sock";
  const std::string shims = dir.file("shims");
  const std::string gate = dir.file("sbatch-gate");
  ASSERT_TRUE(make_dirs(workdir).ok());
  ASSERT_TRUE(make_dirs(shims).ok());
  ASSERT_TRUE(write_file_atomic(workdir + "/data.bin", "lane bytes").ok());
  ASSERT_EQ(::mkfifo(gate.c_str(), 0600), 0);
  // sbatch answers only once the test writes the job id into the FIFO; the other
  // clients answer at once, with nothing.
  ASSERT_TRUE(write_file_atomic(shims + "/sbatch", "#!/bin/sh\nexec cat '" + gate + "'\n", 0755).ok());
  for (const char* tool : {"squeue", "scontrol", "scancel"})
    ASSERT_TRUE(write_file_atomic(shims + "/" + tool, "#!/bin/sh\nexit 0\n", 0755).ok());
  int to_agent[2], from_agent[2];
  const std::string path = shims + ":" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin");
  pid_t main_pid = start_main_agent(workdir, sock, to_agent, from_agent, path);
  ASSERT_GE(main_pid, 0);
  ASSERT_EQ(ask(to_agent[1], from_agent[0], 1, "hello", nlohmann::json::object()).type, protocol::FrameType::kReply);
  ASSERT_TRUE(testing::wait_until([&] { return testing::exists(sock); }, 10s)) << sock;

  std::string start = protocol::encode_frame(protocol::make_request(
      2, "job.start",
      {{"job", "r.slurm"}, {"attempt", 1}, {"token", "t"}, {"command", "true"}, {"slurm", nlohmann::json::object()}}));
  ASSERT_EQ(::write(to_agent[1], start.data(), start.size()), static_cast<ssize_t>(start.size()));
  // The event that sbatch runs: it opens the FIFO, so this open returns.
  int release = ::open(gate.c_str(), O_WRONLY);
  ASSERT_GE(release, 0);

  const auto asked = std::chrono::steady_clock::now();
  int lane = connect_unix(sock);
  ASSERT_GE(lane, 0);
  protocol::Frame hello = ask(lane, lane, 1, "hello", nlohmann::json::object());
  protocol::Frame read = ask(lane, lane, 2, "fs.read", {{"path", "data.bin"}, {"offset", 0}, {"length", 10}});
  const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  EXPECT_EQ(hello.type, protocol::FrameType::kReply) << hello.header.dump();
  EXPECT_EQ(read.body, "lane bytes") << read.header.dump();
  EXPECT_LT(waited_s, 5.0) << "the lane waited on the main agent's sbatch (which answers only when let go)";

  ASSERT_EQ(::write(release, "4242\n", 5), 5);  // sbatch answers now
  ::close(release);
  // The start's answer comes first, then the ping's: the main agent goes on as before.
  protocol::Frame answered = ask(to_agent[1], from_agent[0], 3, "ping", nlohmann::json::object());
  EXPECT_EQ(answered.request_id, 2u) << answered.header.dump();
  ::close(to_agent[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(main_pid, &status, 0), main_pid);
  ::close(lane);
  ::close(from_agent[0]);
}

TEST(LaneListenerTest, APathTooLongForASocketIsRefusedByName) {
  LaneListener l;
  Status s = l.listen("/tmp/" + std::string(kMaxLaneSocketPath, 'x') + ".sock");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("longer than"), std::string::npos) << s.message();
  EXPECT_EQ(l.fd(), -1);
}

// Review N7: in a shared workdir another user could own or open the socket's
// folder and rebind the socket, so the coordinator's lanes would talk to them.
TEST(LaneListenerTest, AFolderNotOwnedOrOpenToOthersIsRefused) {
  testing::TempDir dir;
  const std::string open_dir = dir.file("open/run");
  ASSERT_TRUE(make_dirs(open_dir).ok());
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
  const std::string real = dir.file("real");
  ASSERT_EQ(::mkdir(real.c_str(), 0700), 0);
  ASSERT_TRUE(make_dirs(dir.file("linked")).ok());
  ASSERT_EQ(::symlink(real.c_str(), dir.file("linked/run").c_str()), 0);
  const std::string foreign = dir.file("foreign/run");
  ASSERT_TRUE(make_dirs(foreign).ok());
  ASSERT_EQ(::chmod(foreign.c_str(), 0700), 0);
  ASSERT_EQ(::chown(foreign.c_str(), 65534, 65534), 0) << "the test runs as root";
  for (const std::string& folder : {open_dir, dir.file("linked/run"), foreign}) {
    LaneListener l;
    Status s = l.listen(folder + "/lanes.sock");
    EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << folder << ": " << s.message();
    EXPECT_NE(s.message().find(folder), std::string::npos) << s.message();
    EXPECT_EQ(l.fd(), -1);
    EXPECT_FALSE(testing::exists(folder + "/lanes.sock")) << "nothing bound in " << folder;
  }
  // A folder the listener makes itself is 0700 and the socket the owner's only, whatever the umask.
  mode_t old = ::umask(0);
  LaneListener fresh;
  Status s = fresh.listen(dir.file("fresh/run/lanes.sock"));
  ::umask(old);
  ASSERT_TRUE(s.ok()) << s.message();
  struct stat st {};
  ASSERT_EQ(::lstat(dir.file("fresh/run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  ASSERT_EQ(::lstat(dir.file("fresh/run/lanes.sock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
}

TEST(LaneListenerTest, APeerOfAnotherUidIsRefused) {
  testing::TempDir dir;
  const std::string workdir = dir.file("work");
  const std::string sock = workdir + "/.ferry/run/lanes.sock";
  ASSERT_TRUE(make_dirs(workdir).ok());
  LaneListener l;
  ASSERT_TRUE(l.listen(sock).ok());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The peer's effective uid becomes nobody's (what SO_PEERCRED reports) while its
    // file system uid stays root's, so the 0700 folder alone cannot keep it out:
    // what a group member gets from a UPG umask, or any user from a lax folder.
    ::signal(SIGPIPE, SIG_IGN);  // a refused peer's write meets a closed socket
    if (::setresuid(-1, 65534, -1) != 0) _exit(3);
    ::setfsuid(0);
    if (::geteuid() != 65534) _exit(3);
    int fd = connect_unix(sock);
    if (fd < 0) _exit(4);
    protocol::Frame hello = ask(fd, fd, 1, "hello", nlohmann::json::object());
    _exit(hello.type == protocol::FrameType::kReply ? 0 : 1);
  }
  Status s = l.accept_one(workdir, 5);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1) << "0: another uid's hello was served; 3: setresuid failed; 4: no connect";
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied) << s.message();
  EXPECT_NE(s.message().find("uid 65534"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ferry
