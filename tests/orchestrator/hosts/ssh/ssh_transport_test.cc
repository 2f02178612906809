// SshTransport on the testbed: a bit-identical echo through `cat`, read timeouts,
// end of stream, and the agent bootstrap (upload, verify with hash-self, reuse,
// refuse a binary whose hash does not match) using ssh_fake_agent.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>

#include "base/file_hash.h"
#include "orchestrator/hosts/ssh/agent_bootstrap.h"
#include "orchestrator/hosts/ssh/ssh_transport.h"
#include "protocol/frame.h"
#include "tests/orchestrator/hosts/ssh/testbed_env.h"
#include "tests/support/defer.h"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

// Writes `data` through `t` and reads the echo back, interleaving reads so the
// echo never fills the windows. Returns what came back.
std::string echo_through(AgentTransport& t, const std::string& data) {
  constexpr size_t kChunk = 256 * 1024;
  std::string got;
  std::string buf(1 << 20, '\0');
  auto drain = [&](int timeout_ms) {
    auto n = t.read_some(&buf[0], buf.size(), timeout_ms);
    EXPECT_TRUE(n.ok()) << n.status().to_string();
    if (n.ok()) got.append(buf.data(), *n);
    return n.ok() ? *n : 0;
  };
  for (size_t off = 0; off < data.size(); off += kChunk) {
    Status s = t.write_all(data.data() + off, std::min(kChunk, data.size() - off));
    EXPECT_TRUE(s.ok()) << s.to_string();
    if (!s.ok()) return got;
    while (drain(0) > 0) {
    }
  }
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (got.size() < data.size() && Clock::now() < deadline) drain(1000);
  return got;
}

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(&s[i], &v, std::min<size_t>(8, n - i));
  }
  return s;
}

class SshTransportTest : public ::testing::Test {
 protected:
  void SetUp() override { FERRY_LOAD_TESTBED_OR_SKIP(tb_); }
  testbed::Testbed tb_;
};

TEST_F(SshTransportTest, EchoThroughCatIsBitIdentical) {
  SshTransport t(tb_.target(0), "/unused", "cat");
  Status st = t.open();
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(t.describe(), "ssh root@" + tb_.hosts[0].address + ":22");
  const std::string data = random_bytes(24 * 1024 * 1024 + 123, 42);
  std::string got = echo_through(t, data);
  ASSERT_EQ(got.size(), data.size());
  EXPECT_TRUE(got == data) << "echo differs";
  EXPECT_EQ(xxh128_hex(got.data(), got.size()), xxh128_hex(data.data(), data.size()));
  t.close();
  t.close();  // idempotent
}

TEST_F(SshTransportTest, ReadSomeReturnsZeroWhenNothingArrives) {
  SshTransport t(tb_.target(1), "/unused", "cat");
  ASSERT_TRUE(t.open().ok());
  char buf[16];
  auto t0 = Clock::now();
  auto n = t.read_some(buf, sizeof(buf), 300);
  auto took = Clock::now() - t0;
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(*n, 0u);
  EXPECT_GE(took, std::chrono::milliseconds(250));
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST_F(SshTransportTest, EndOfTheRemoteStreamIsAnError) {
  SshTransport t(tb_.target(1), "/unused", "echo hello; echo bye >&2");
  ASSERT_TRUE(t.open().ok());
  std::string got;
  char buf[64];
  Status end;
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    auto n = t.read_some(buf, sizeof(buf), 1000);
    if (!n.ok()) {
      end = n.status();
      break;
    }
    got.append(buf, *n);
  }
  EXPECT_EQ(got, "hello\n");
  ASSERT_FALSE(end.ok());
  EXPECT_EQ(end.code(), StatusCode::kUnavailable);
  EXPECT_NE(end.message().find("bye"), std::string::npos) << end.message();  // stderr in the message
}

TEST_F(SshTransportTest, WriteBeforeOpenFails) {
  SshTransport t(tb_.target(0), "/unused", "cat");
  EXPECT_EQ(t.write_all("x", 1).code(), StatusCode::kFailedPrecondition);
}

// The tests that start an agent: the binary named by $`env`, run on testbed host `host`
// in a workdir of the test's own (`folder`-PID under the host's), removed after.
class AgentOnHostTest : public SshTransportTest {
 protected:
  AgentOnHostTest(const char* env, size_t host, const char* folder) : env_(env), host_(host), folder_(folder) {}
  void SetUp() override {
    SshTransportTest::SetUp();
    if (IsSkipped()) return;
    const char* a = std::getenv(env_);
    ASSERT_NE(a, nullptr) << env_ << " not set";
    agent_ = a;
    target_ = tb_.target(host_);
    target_.workdir = tb_.hosts[host_].workdir + "/" + folder_ + "-" + std::to_string(getpid());
  }
  void TearDown() override {
    if (!target_.workdir.empty()) std::system(("rm -rf " + shell_quote(target_.workdir)).c_str());
  }
  const char* env_;
  size_t host_;
  const char* folder_;
  std::string agent_;
  SshTarget target_;
};

class AgentBootstrapTest : public AgentOnHostTest {
 protected:
  // A fresh workdir on h3, so the first open really uploads.
  AgentBootstrapTest() : AgentOnHostTest("FERRY_FAKE_AGENT", 2, "bootstrap") {}
  // What `ls -A` lists in the workdir's .ferry/bin, temporary uploads included (the
  // hosts share our file system); nothing when there is no such folder.
  std::string installed_agents() const {
    FILE* p = popen(("ls -A " + shell_quote(target_.workdir + "/.ferry/bin") + " 2>/dev/null").c_str(), "r");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf), p);
    pclose(p);
    return std::string(buf, n);
  }
};

TEST_F(AgentBootstrapTest, UploadsVerifiesThenRunsTheAgentAndReusesIt) {
  auto hash = xxh128_file_hex(agent_);
  ASSERT_TRUE(hash.ok());
  {
    SshTransport t(target_, agent_);
    Status st = t.open();
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_TRUE(t.uploaded_agent());
    EXPECT_EQ(t.remote_agent_path(), target_.workdir + "/.ferry/bin/ferry-agent-" + *hash);
    // The installed file is the local binary, byte for byte (the hosts share our filesystem).
    auto remote = xxh128_file_hex(t.remote_agent_path());
    ASSERT_TRUE(remote.ok());
    EXPECT_EQ(*remote, *hash);
    // `serve` is running on the channel: the fake one echoes.
    const std::string msg = random_bytes(3 * 1024 * 1024, 7);
    EXPECT_TRUE(echo_through(t, msg) == msg);
  }
  {
    SshTransport t(target_, agent_);
    Status st = t.open();
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_FALSE(t.uploaded_agent());  // already there: no second upload
  }
  // No temporary upload left behind.
  EXPECT_EQ(installed_agents(), "ferry-agent-" + *hash + "\n");
}

TEST_F(AgentBootstrapTest, RefusesAnAgentWhoseHashSelfDisagrees) {
  // An "agent" that runs but reports the wrong hash (a truncated or foreign binary
  // would be caught the same way).
  testbed::TempDir dir;
  const std::string liar = dir.path + "/liar-agent";
  testbed::write_file(liar, "#!/bin/sh\necho 00000000000000000000000000000000\n");
  SshTransport t(target_, liar);
  Status st = t.open();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kDataLoss) << st.to_string();
  EXPECT_NE(st.message().find("expected"), std::string::npos);
  // Neither the final path nor the temporary upload exists.
  auto hash = xxh128_file_hex(liar);
  ASSERT_TRUE(hash.ok());
  EXPECT_NE(access(remote_agent_path(target_.workdir, *hash).c_str(), F_OK), 0);
  EXPECT_EQ(installed_agents(), "");
}

// Data lanes (SshTransport::open_lane) with the real agent: channels of the main
// link's session to its lanes socket, so a lane opens no exec and no TCP connection
// and the host's login rc runs for the main link only; and a lane whose socket is
// gone falls back to an exec of its own, still on the same session.
class LaneSocketTest : public AgentOnHostTest {
 protected:
  LaneSocketTest() : AgentOnHostTest("FERRY_REAL_AGENT", 1, "lanes") {}
  void SetUp() override {
    AgentOnHostTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    // Every login shell of h2 leaves a line here while this test runs.
    rc_ = tb_.state_dir + "/h2/home/.bashrc";
    logins_ = target_.workdir + ".logins";
    testbed::write_file(rc_, "echo login >> " + shell_quote(logins_) + "\n");
  }
  void TearDown() override {
    if (!rc_.empty()) {
      std::remove(rc_.c_str());
      std::remove(logins_.c_str());
    }
    AgentOnHostTest::TearDown();
  }
  size_t logins() const {
    std::string s = testbed::read_file(logins_);
    return static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  }
  // Takes a lane's opening on until it is open (AgentTransport::poll_open).
  static void expect_lane_opens(AgentTransport& lane) {
    auto deadline = Clock::now() + std::chrono::seconds(30);
    for (;;) {
      auto open = lane.poll_open();
      ASSERT_TRUE(open.ok()) << open.status().to_string();
      if (*open) return;
      ASSERT_LT(Clock::now(), deadline) << "the lane never opened: " << lane.describe();
      pollfd p{lane.poll_fd(), POLLIN, 0};
      (void)::poll(&p, 1, 100);
    }
  }
  // A ping through `t` is answered by an agent.
  static void expect_agent_answers(AgentTransport& t) {
    std::string req = protocol::encode_frame(protocol::make_request(7, "ping", nlohmann::json::object()));
    ASSERT_TRUE(t.write_all(req.data(), req.size()).ok());
    protocol::FrameDecoder d;
    auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      auto [dst, room] = d.prepare(1 << 16);
      auto n = t.read_some(dst, room, 200);
      ASSERT_TRUE(n.ok()) << n.status().to_string();
      d.commit(*n);
      auto f = d.next();
      ASSERT_TRUE(f.ok());
      if (f->has_value() && (*f)->type == protocol::FrameType::kReply) {
        EXPECT_EQ((*f)->request_id, 7u);
        return;
      }
    }
    ADD_FAILURE() << "no reply through " << t.describe();
  }
  std::string rc_, logins_;
};

TEST_F(LaneSocketTest, LanesRideTheMainAgentsSocketAndRunNoLoginShell) {
  SshTransport main(target_, agent_);
  Status st = main.open();
  ASSERT_TRUE(st.ok()) << st.to_string();
  expect_agent_answers(main);
  const size_t after_main = logins();
  EXPECT_GE(after_main, 1u) << "the rc runs for the main link's exec";
  ASSERT_FALSE(main.lanes_socket_path().empty());
  auto lane1 = main.open_lane();
  auto lane2 = main.open_lane();
  ASSERT_TRUE(lane1.ok()) << lane1.status().to_string();
  ASSERT_TRUE(lane2.ok()) << lane2.status().to_string();
  EXPECT_NE((*lane1)->describe().find("unix socket"), std::string::npos) << (*lane1)->describe();
  expect_agent_answers(**lane1);
  expect_agent_answers(**lane2);
  expect_agent_answers(main);
  EXPECT_EQ(logins(), after_main) << "a lane on the socket starts no shell";
  // One TCP connection carries them all (review F19).
  EXPECT_GE(main.poll_fd(), 0);
  EXPECT_EQ((*lane1)->poll_fd(), main.poll_fd());
  EXPECT_EQ((*lane2)->poll_fd(), main.poll_fd());
  (*lane1)->close();
  expect_agent_answers(**lane2);
}

// Review F20.6: a login rc that prints (a greeting; words without a newline that
// share the marker's line) is skipped, not taken for a broken agent and retried.
TEST_F(LaneSocketTest, WhatALoginRcPrintsBeforeTheAgentIsSkipped) {
  testbed::write_file(rc_, "echo 'Welcome to h2'\necho\nprintf 'conda: base activated '\n");
  SshTransport t(target_, agent_);
  Status st = t.open();
  ASSERT_TRUE(st.ok()) << st.to_string();
  expect_agent_answers(t);
}

// An rc that says more than a marker line may fails at once with the cause and the fix.
TEST_F(LaneSocketTest, ALoginRcThatNeverStopsTalkingFailsWithTheFix) {
  testbed::write_file(rc_, "for i in $(seq 1 400); do echo \"motd line $i of a very chatty login rc\"; done\n");
  SshTransport t(target_, agent_);
  Status st = t.open();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("the login shell printed more than"), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find("motd line 1 of"), std::string::npos) << st.to_string();
}

TEST_F(LaneSocketTest, ALaneWhoseSocketIsGoneStartsItsOwnAgentOnTheSameSession) {
  SshTransport main(target_, agent_);
  Status st = main.open();
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_FALSE(main.lanes_socket_path().empty());
  expect_agent_answers(main);  // serving: it bound its socket before it read a request
  ASSERT_EQ(::unlink(main.lanes_socket_path().c_str()), 0) << main.lanes_socket_path();
  const size_t before = logins();
  auto lane = main.open_lane();
  ASSERT_TRUE(lane.ok()) << lane.status().to_string();
  EXPECT_EQ((*lane)->describe().find("unix socket"), std::string::npos) << (*lane)->describe();
  expect_lane_opens(**lane);
  expect_agent_answers(**lane);
  EXPECT_GT(logins(), before) << "the fallback is an exec";
  EXPECT_EQ((*lane)->poll_fd(), main.poll_fd()) << "on the same session";
  expect_agent_answers(main);
}

// Review P5 (b): a lane by exec used to read its login shell's marker before open_lane
// returned, up to 30 s, and the host's one thread with it. Here the rc waits until the
// test lets it go: open_lane returns at once, the main link answers meanwhile, and the
// lane opens when its marker comes.
TEST_F(LaneSocketTest, ALaneByExecOpensWithoutHoldingTheMainLink) {
  SshTransport main(target_, agent_);
  Status st = main.open();
  ASSERT_TRUE(st.ok()) << st.to_string();
  expect_agent_answers(main);
  ASSERT_EQ(::unlink(main.lanes_socket_path().c_str()), 0) << main.lanes_socket_path();
  const std::string gate = target_.workdir + ".rc-gate";
  ASSERT_EQ(::mkfifo(gate.c_str(), 0666), 0) << gate;
  // However the test ends, a login shell still waiting on the gate is let go.
  testing::Defer let_go{[&] {
    int w = ::open(gate.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) {
      (void)!::write(w, "go\n", 3);
      ::close(w);
    }
    std::remove(gate.c_str());
  }};
  testbed::write_file(rc_, "read line < " + shell_quote(gate) + "\n");
  const auto asked = Clock::now();
  auto lane = main.open_lane();
  ASSERT_TRUE(lane.ok()) << lane.status().to_string();
  EXPECT_LT(Clock::now() - asked, std::chrono::seconds(5))
      << "open_lane waited for the login shell (held until let go)";
  auto open = (*lane)->poll_open();
  ASSERT_TRUE(open.ok()) << open.status().to_string();
  EXPECT_FALSE(*open) << "open before its login shell got past the rc";
  expect_agent_answers(main);
  int release = ::open(gate.c_str(), O_WRONLY);  // the rc's read has it open: this returns
  ASSERT_GE(release, 0);
  ASSERT_EQ(::write(release, "go\n", 3), 3);
  ::close(release);
  expect_lane_opens(**lane);
  expect_agent_answers(**lane);
}

TEST_F(AgentBootstrapTest, MissingLocalAgentIsNamed) {
  SshTransport t(target_, "/nonexistent/ferry-agent");
  Status st = t.open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent/ferry-agent"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace ferry
