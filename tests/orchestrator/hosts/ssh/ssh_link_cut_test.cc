// A cut link (testbed.sh cut: both veth ends down, packets blackholed) must make a
// blocked read or write fail within ~15-20 s thanks to the socket's keepalive and
// TCP_USER_TIMEOUT (tcp_socket.h), and a restored link must accept new sessions.
// Uses h3; ctest runs this test alone (RUN_SERIAL).
#include <gtest/gtest.h>

#include <chrono>

#include "orchestrator/hosts/ssh/ssh_transport.h"
#include "orchestrator/hosts/ssh/tcp_socket.h"
#include "tests/orchestrator/hosts/ssh/testbed_env.h"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;
/// What the brief promises callers: a dead link noticed within this.
constexpr auto kMustNoticeWithin = std::chrono::seconds(20);

class SshLinkCutTest : public ::testing::Test {
 protected:
  void SetUp() override { FERRY_LOAD_TESTBED_OR_SKIP(tb_); }
  size_t host() const { return tb_.hosts.size() - 1; }
  std::string host_name() const { return tb_.hosts[host()].name; }

  void open_echo(SshTransport& t) {
    Status st = t.open();
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_TRUE(t.write_all("ping", 4).ok());
    char buf[8];
    size_t got = 0;
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (got < 4 && Clock::now() < deadline) {
      auto n = t.read_some(buf + got, 4 - got, 1000);
      ASSERT_TRUE(n.ok()) << n.status().to_string();
      got += *n;
    }
    ASSERT_EQ(std::string(buf, got), "ping");
  }

  // The promise, for reads and writes alike: `what` failed on the cut as kUnavailable,
  // within kMustNoticeWithin of it.
  static void expect_noticed_in_time(const char* what, const Status& failure, Clock::duration took) {
    ASSERT_FALSE(failure.ok()) << what << " never failed";
    EXPECT_EQ(failure.code(), StatusCode::kUnavailable) << failure.to_string();
    EXPECT_LE(took, kMustNoticeWithin) << std::chrono::duration_cast<std::chrono::seconds>(took).count() << " s";
    std::printf("%s failed after %lld ms: %s\n", what,
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()),
                failure.to_string().c_str());
  }

  testbed::Testbed tb_;
};

TEST_F(SshLinkCutTest, IdleReadFailsSoonAfterACut) {
  SshTransport t(tb_.target(host()), "/unused", "cat");
  open_echo(t);
  ASSERT_EQ(tb_.run("cut " + host_name()), 0);
  testbed::Defer restore{[&] { tb_.run("restore " + host_name()); }};
  auto t0 = Clock::now();
  Status failure;
  char buf[64];
  while (Clock::now() - t0 < std::chrono::seconds(40)) {
    auto n = t.read_some(buf, sizeof(buf), 1000);
    if (!n.ok()) {
      failure = n.status();
      break;
    }
    ASSERT_EQ(*n, 0u);
  }
  ASSERT_NO_FATAL_FAILURE(expect_noticed_in_time("idle read", failure, Clock::now() - t0));
  t.close();  // bounded on a dead link
  EXPECT_LE(Clock::now() - t0, kMustNoticeWithin + std::chrono::seconds(3));
}

TEST_F(SshLinkCutTest, WriteFailsSoonAfterACut) {
  SshTransport t(tb_.target(host()), "/unused", "cat > /dev/null");
  Status st = t.open();
  ASSERT_TRUE(st.ok()) << st.to_string();
  std::string chunk(1 << 20, 'z');
  ASSERT_TRUE(t.write_all(chunk.data(), chunk.size()).ok());
  ASSERT_EQ(tb_.run("cut " + host_name()), 0);
  testbed::Defer restore{[&] { tb_.run("restore " + host_name()); }};
  auto t0 = Clock::now();
  Status failure;
  // Each write_all blocks once the 2 MiB channel window is used up; the dead link
  // must turn that into an error rather than a hang.
  while (Clock::now() - t0 < std::chrono::seconds(40)) {
    failure = t.write_all(chunk.data(), chunk.size());
    if (!failure.ok()) break;
  }
  ASSERT_NO_FATAL_FAILURE(expect_noticed_in_time("write", failure, Clock::now() - t0));
}

TEST_F(SshLinkCutTest, NewConnectionFailsWhileCutAndSucceedsAfterRestore) {
  ASSERT_EQ(tb_.run("cut " + host_name()), 0);
  {
    testbed::Defer restore{[&] { tb_.run("restore " + host_name()); }};
    SshTarget target = tb_.target(host());
    target.connect_timeout_ms = 2000;
    SshTransport t(target, "/unused", "cat");
    auto t0 = Clock::now();
    Status st = t.open();
    EXPECT_FALSE(st.ok());
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(4)) << st.to_string();
  }
  SshTransport t(tb_.target(host()), "/unused", "cat");
  open_echo(t);
}

}  // namespace
}  // namespace ferry
