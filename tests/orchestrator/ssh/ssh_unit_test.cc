// Unit tests of the SSH layer's pieces that need no testbed.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "base/file_hash.h"
#include "base/shell_quote.h"
#include "orchestrator/ssh/agent_bootstrap.h"
#include "orchestrator/ssh/tcp_socket.h"

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
  auto fd = tcp_connect("127.0.0.1", ntohs(a.sin_port), 5000);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kUnavailable) << fd.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

}  // namespace
}  // namespace ferry
