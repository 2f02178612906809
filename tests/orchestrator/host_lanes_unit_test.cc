// A HostConnection's data lanes (host_connection.h) without processes or SSH: every
// link is an InProcessTransport (tests/support/in_process_transport.h), whose
// LinkFaults count the links opened and break or refuse them. The same over sshd, with
// a relay of 64 streams, is TestbedCopyTest.RelayWithSixtyFourStreamsRidesOneTcpLinkAndOneThreadPerHost.
#include "orchestrator/host_connection.h"

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
    ConnectionOptions opts;
    opts.ping_every_s = 600;  // no pings: each request a test sends is the only one on its link
    opts.backoff_initial_s = 0.05;
    conn_ = std::make_shared<HostConnection>(
        io_, "h", [this] { return std::make_unique<testing::InProcessTransport>(dir_.path(), faults_); }, opts);
    conn_->start(nullptr);
  }
  void TearDown() override { conn_->stop(); }

  // A ping on `lane`, waited for on this (the io) thread.
  Status ping(int lane) {
    std::optional<Status> got;
    conn_->call(
        "ping", nlohmann::json::object(), [&](Result<protocol::Frame> r) { got = r.status(); }, {}, lane);
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

}  // namespace
}  // namespace ferry
