// Unit tests of the SSH layer's pieces that need no testbed.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "base/file_hash.h"
#include "base/file_util.h"
#include "base/login_shell_command.h"
#include "base/shell_quote.h"
#include "orchestrator/hosts/ssh/agent_bootstrap.h"
#include "orchestrator/hosts/ssh/tcp_socket.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

TEST(ShellQuoteTest, QuotesEverythingIntoOneWord) {
  EXPECT_EQ(shell_quote("plain"), "'plain'");
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  // Runs through a real shell: the value comes back unchanged, nothing executes.
  const std::string nasty = "a b;$(touch /tmp/ferry-pwned)`x`'\"\\\n*";
  FILE* p = popen(("printf %s " + shell_quote(nasty)).c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string got;
  char buf[256];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) got.append(buf, n);
  pclose(p);
  EXPECT_EQ(got, nasty);
  EXPECT_NE(access("/tmp/ferry-pwned", F_OK), 0);
}

TEST(FileHashTest, MatchesTheXxh128ReferenceVector) {
  // XXH3_128bits("") with seed 0, from the xxHash sanity tables (xxhsum -H2 of an empty file).
  EXPECT_EQ(xxh128_hex("", 0), "99aa06d3014798d86001c324468d497f");
}

TEST(FileHashTest, FileHashEqualsBufferHash) {
  char path[] = "/tmp/ferry-hash-test.XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string data(3 * 1024 * 1024 + 17, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
  ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  close(fd);
  auto h = xxh128_file_hex(path);
  unlink(path);
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  EXPECT_EQ(*h, xxh128_hex(data.data(), data.size()));
  EXPECT_EQ(h->size(), 32u);
}

TEST(FileHashTest, MissingFileIsNotFound) {
  auto h = xxh128_file_hex("/nonexistent/ferry-agent");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kNotFound);
}

TEST(AgentBootstrapTest, RemotePathIsContentAddressedUnderTheWorkdir) {
  EXPECT_EQ(remote_agent_path("/srv/w/", "ab12"), "/srv/w/.ferry/bin/ferry-agent-ab12");
  EXPECT_EQ(remote_agent_path("", "ab12"), "./.ferry/bin/ferry-agent-ab12");
}

// Review-4 F15: another user who can write a folder above the workdir (a team's
// setgid 2775 folder without the sticky bit) can move the workdir away and put
// their own agent in its place between the probe's check and its exec. The probe
// refuses it by name, whether the workdir is there yet or not, through a symlink
// or not, and under a tcsh login shell too; the sticky bit makes it safe.
TEST(AgentBootstrapTest, AGroupWritableFolderAboveTheWorkdirWithoutTheStickyBitIsRefusedByName) {
  testing::TempDir t;
  const std::string team = t.file("team"), work = team + "/alice/work";
  ASSERT_TRUE(make_dirs(work).ok());
  ASSERT_EQ(::chmod(team.c_str(), 02775), 0);
  ASSERT_EQ(::symlink((team + "/alice").c_str(), t.file("link").c_str()), 0);
  auto probe = [](const std::string& shell, const std::string& workdir) {
    auto command = login_shell_command(agent_dirs_check_command(workdir));
    EXPECT_TRUE(command.ok()) << command.status().to_string();
    auto r = testing::run_process({shell, "-c", *command}, {}, 30);
    EXPECT_EQ(r.exit_code, 0) << shell << ": " << r.err;
    return r.out;
  };
  const std::string uid = std::to_string(::geteuid());
  const std::string unsafe = std::string(kAgentUnsafe) + "above drwxrwsr-x " + uid + " " + team + "\n";
  EXPECT_EQ(probe("/bin/sh", work), unsafe);
  EXPECT_EQ(probe("/bin/sh", work + "/not/made/yet"), unsafe);
  EXPECT_EQ(probe("/bin/sh", t.file("link/work")), unsafe) << "checked on the path the link leads to";
  if (::access("/usr/bin/tcsh", X_OK) == 0) {
    EXPECT_EQ(probe("/usr/bin/tcsh", work), unsafe);
  }
  Status refused = agent_dirs_refusal("h1", unsafe);
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(
      refused.message().find("refusing to run the agent below " + team + " (mode drwxrwsr-x, owner uid " + uid + ")"),
      std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("unless sticky"), std::string::npos) << refused.message();

  ASSERT_EQ(::chmod(team.c_str(), 03775), 0);  // sticky: only an entry's owner may move it
  EXPECT_EQ(probe("/bin/sh", work), "");
  ASSERT_EQ(::chmod(team.c_str(), 0755), 0);
  EXPECT_EQ(probe("/bin/sh", work), "");
}

TEST(TcpSocketTest, SetsDeadLinkOptions) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  socklen_t len = sizeof(a);
  getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  auto fd = tcp_connect("127.0.0.1", ntohs(a.sin_port), 2000);
  ASSERT_TRUE(fd.ok()) << fd.status().to_string();
  auto get = [&](int level, int name) {
    int v = -1;
    socklen_t l = sizeof(v);
    getsockopt(*fd, level, name, &v, &l);
    return v;
  };
  EXPECT_EQ(get(SOL_SOCKET, SO_KEEPALIVE), 1);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_KEEPIDLE), kTcpKeepIdleS);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_KEEPINTVL), kTcpKeepIntvlS);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_KEEPCNT), kTcpKeepCnt);
  EXPECT_EQ(get(IPPROTO_TCP, TCP_USER_TIMEOUT), kTcpUserTimeoutMs);
  // The promise in tcp_socket.h: idle or busy, a dead link is noticed in time.
  EXPECT_LE(kTcpKeepIdleS * 1000 + kTcpKeepIntvlS * 1000 * kTcpKeepCnt, kDeadLinkDetectS * 1000);
  EXPECT_LE(kTcpUserTimeoutMs, kDeadLinkDetectS * 1000);
  close(*fd);
  close(listener);
}

TEST(TcpSocketTest, RefusedConnectionIsUnavailableAndQuick) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);  // nobody listens on that port now
  auto t0 = std::chrono::steady_clock::now();
  auto fd = tcp_connect("127.0.0.1", ntohs(a.sin_port), 20000);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kUnavailable) << fd.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << "waited for the connect timeout";
}

}  // namespace
}  // namespace ferry
