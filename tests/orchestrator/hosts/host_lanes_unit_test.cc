// A HostConnection's data lanes (host_connection.h) without processes or SSH: every
// link is an InProcessTransport (tests/support/in_process_transport.h), whose
// LinkFaults count the links opened and break or refuse them. The same over sshd, with
// a relay of 64 streams, is TestbedCopyTest.RelayWithSixtyFourStreamsRidesOneTcpLinkAndOneThreadPerHost.
#include "orchestrator/hosts/host_connection.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "tests/support/in_process_transport.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::LinkFaults;

int threads_of_this_process() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

class HostLanesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    conn_ = std::make_shared<HostConnection>(
        io_, "h", [this] { return std::make_unique<testing::InProcessTransport>(dir_.path(), faults_); }, options());
    conn_->start(nullptr);
  }
  virtual ConnectionOptions options() const {
    ConnectionOptions opts;
    opts.ping_every_s = 600;  // no pings: each request a test sends is the only one on its link
    opts.backoff_initial_s = 0.05;
    return opts;
  }
  void TearDown() override { conn_->stop(); }

  // A ping on `lane`, waited for on this (the io) thread.
  Status ping(int lane) {
    std::optional<Status> got;
    conn_->call(
        "ping", nlohmann::json::object(), [&](Result<protocol::Frame> r) { got = r.status(); }, {}, lane);
    return wait_for(got);
  }
  // Runs the io thread until `got` is set (30 s at most).
  Status wait_for(const std::optional<Status>& got) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!got && std::chrono::steady_clock::now() < deadline) {
      io_.run_for(std::chrono::milliseconds(10));
      io_.restart();
    }
    return got ? *got : Status(StatusCode::kDeadlineExceeded, "no reply in 30 s");
  }

  testing::TempDir dir_;
  std::shared_ptr<LinkFaults> faults_ = std::make_shared<LinkFaults>();
  boost::asio::io_context io_;
  std::shared_ptr<HostConnection> conn_;
};

TEST_F(HostLanesTest, EachLaneIsALinkOfItsOwnServedByTheHostsOneThread) {
  ASSERT_TRUE(ping(0).ok());
  const int threads = threads_of_this_process();
  for (int lane = 1; lane <= 16; ++lane) ASSERT_TRUE(ping(lane).ok()) << "lane " << lane;
  for (int lane = 1; lane <= 16; ++lane) ASSERT_TRUE(ping(lane).ok()) << "lane " << lane << ", again";
  EXPECT_EQ(faults_->links_opened(), 1 + 16) << "the main link and one per lane, each opened once";
  EXPECT_EQ(threads_of_this_process(), threads) << "no thread per lane";
}

TEST_F(HostLanesTest, ALaneThatCannotOpenRidesTheMainLink) {
  ASSERT_TRUE(ping(0).ok());
  faults_->refuse_links(LinkFaults::kForever);
  EXPECT_TRUE(ping(3).ok());
  EXPECT_TRUE(ping(3).ok());
  EXPECT_EQ(faults_->links_opened(), 1);
}

TEST_F(HostLanesTest, ALaneWhoseLinkBreaksFailsItsOwnCallsAndOpensAgainOnTheNext) {
  ASSERT_TRUE(ping(0).ok());
  ASSERT_TRUE(ping(2).ok());
  ASSERT_EQ(faults_->links_opened(), 2);
  faults_->drop_link_on("ping");
  Status lost = ping(2);
  EXPECT_EQ(lost.code(), StatusCode::kUnavailable) << lost.to_string();
  EXPECT_NE(lost.message().find("lane 2"), std::string::npos) << lost.to_string();
  EXPECT_TRUE(ping(0).ok()) << "the main link is not the lane's";
  EXPECT_EQ(faults_->links_opened(), 2) << "the main link was not reopened";
  EXPECT_TRUE(ping(2).ok());
  EXPECT_EQ(faults_->links_opened(), 3) << "the lane opened again";
}

TEST_F(HostLanesTest, AClosedLaneOpensAgainOnItsNextCall) {
  ASSERT_TRUE(ping(1).ok());
  ASSERT_EQ(faults_->links_opened(), 2);
  conn_->close_lane(1);
  EXPECT_TRUE(ping(1).ok());
  EXPECT_EQ(faults_->links_opened(), 3);
}

// Review P5 (b): a lane opened by exec (sshd without streamlocal forwarding) read its
// login shell's marker on the host's one thread, for up to 30 s, and every other stream
// waited. Its opening is now polled among the other streams' reads.
TEST_F(HostLanesTest, ALaneThatIsSlowToOpenHoldsUpNoMainCall) {
  ASSERT_TRUE(ping(0).ok());
  faults_->slow_lane_opening(5);
  std::optional<Status> on_lane;
  conn_->call(
      "ping", nlohmann::json::object(), [&](Result<protocol::Frame> r) { on_lane = r.status(); }, {}, 1);
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_TRUE(ping(0).ok());
  const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  // Bounds in these tests are far from both sides: the ping takes milliseconds, waiting
  // would take the opening's 5 s, and the sanitizer's run is niced beside the suite.
  EXPECT_LT(waited_s, 4.0) << "a main-link ping waited on the lane's opening";
  EXPECT_FALSE(on_lane.has_value()) << "the lane's call ended before its lane opened";
  Status lane = wait_for(on_lane);
  EXPECT_TRUE(lane.ok()) << "the lane's call goes out once it is open: " << lane.to_string();
  EXPECT_EQ(faults_->links_opened(), 2) << "the main link and the lane, each opened once";
}

// A lane that fails while it opens reached no agent: its calls ride the main link.
TEST_F(HostLanesTest, ALaneThatFailsWhileOpeningSendsItsCallsOnTheMainLink) {
  ASSERT_TRUE(ping(0).ok());
  faults_->slow_lane_opening(0.2, /*then_fail=*/true);
  EXPECT_TRUE(ping(4).ok());
  EXPECT_TRUE(ping(4).ok()) << "and rides it for a while";
  EXPECT_EQ(faults_->links_opened(), 2) << "the lane was tried once";
}

// A lane whose agent never takes it up (review of F19: the host's one thread used to
// wait for each new lane's hello, holding up every other stream, and then sent the
// lane's calls on the main stream for good). The main link's calls go on meanwhile,
// and the lane's call fails alone once the lane has been silent for dead_after_s.
class SilentLaneTest : public HostLanesTest {
 protected:
  ConnectionOptions options() const override {
    ConnectionOptions opts = HostLanesTest::options();
    opts.ping_every_s = 0.2;  // the main link stays heard
    opts.dead_after_s = 1;
    return opts;
  }
};

TEST_F(SilentLaneTest, ALaneWhoseAgentNeverAnswersHoldsUpNoOtherCallAndFailsAlone) {
  ASSERT_TRUE(ping(0).ok());
  faults_->mute_new_lanes();
  std::optional<Status> on_lane;
  conn_->call(
      "ping", nlohmann::json::object(), [&](Result<protocol::Frame> r) { on_lane = r.status(); }, {}, 1);
  EXPECT_TRUE(ping(0).ok());
  EXPECT_FALSE(on_lane.has_value()) << "the lane's call ended before a main call made after it: "
                                    << (on_lane ? on_lane->to_string() : "");
  Status lane = wait_for(on_lane);
  EXPECT_EQ(lane.code(), StatusCode::kUnavailable) << lane.to_string();
  EXPECT_NE(lane.message().find("lane 1"), std::string::npos) << lane.to_string();
  EXPECT_TRUE(ping(0).ok());
  EXPECT_EQ(faults_->links_opened(), 2) << "the main link was reopened";
}

}  // namespace
}  // namespace ferry
