// Requests built from the user's values, past the frame header's 1 MiB cap
// (review N8): a job's command and env ride in the body, a value exec(2) cannot
// take fails its stage at once by name, and any request still too large fails
// that call only; the link and the other stages on the host go on.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>

#include "orchestrator/hosts/host_connection.h"
#include "orchestrator/hosts/local_transport.h"
#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::read_text;
using testing::write_text;

class LargeRequestTest : public testing::FerryHomeTest {
 protected:
  LargeRequestTest() : FerryHomeTest(300) {}
  std::string sql(const std::string& query) {
    return testing::run_process({"sqlite3", "-cmd", ".timeout 10000", home_.file("ferry.db"), query}).out;
  }
};

TEST_F(LargeRequestTest, ARequestOverTheHeaderCapFailsThatCallOnly) {
  boost::asio::io_context io;
  ConnectionOptions options;
  options.give_up_s = 30;
  auto conn = std::make_shared<HostConnection>(
      io, "local", [&] { return std::make_unique<LocalTransport>(testing::bin_dir() + "/ferry-agent", work_.path()); },
      options);
  std::vector<std::string> states;
  conn->start([&](bool connected, const std::string& why) { states.push_back(connected ? "up" : "down: " + why); });
  auto wait_for = [&](Result<protocol::Frame>* out, const std::string& op, nlohmann::json args) {
    bool done = false;
    conn->call(op, std::move(args), [&](Result<protocol::Frame> r) {
      *out = std::move(r);
      done = true;
    });
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done && std::chrono::steady_clock::now() < until) {
      io.run_for(std::chrono::milliseconds(20));
      io.restart();
    }
    return done;
  };
  Result<protocol::Frame> big = internal_error("unanswered");
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(wait_for(&big, "fs.stat", {{"path", "x"}, {"pad", std::string(2 << 20, 'x')}}));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument) << big.status().message();
  EXPECT_NE(big.status().message().find("'fs.stat'"), std::string::npos) << big.status().message();
  EXPECT_NE(big.status().message().find("2097"), std::string::npos) << "names its size: " << big.status().message();
  EXPECT_LT(took, 10) << "fails at once, not after reconnects";

  Result<protocol::Frame> small = internal_error("unanswered");
  ASSERT_TRUE(wait_for(&small, "fs.stat", {{"path", "."}}));
  EXPECT_TRUE(small.ok()) << small.status().message();
  conn->stop();
  for (const auto& s : states) EXPECT_EQ(s.rfind("down", 0), std::string::npos) << "the link never dropped: " << s;
}

TEST_F(LargeRequestTest, AJobStartWithA2MiBEnvFailsItsStageAtOnceAndTheHostGoesOn) {
  std::string path = work_.file("wf.yaml");
  write_text(path, "name: bigenv\nparams:\n  big: " + std::string(2 << 20, 'v') +
                       "\nstages:\n"
                       "  big:\n    run: echo never\n    env:\n      BIG: ${{ params.big }}\n"
                       "  other:\n    run: echo fine > other.txt\n");
  auto t0 = std::chrono::steady_clock::now();
  auto r = ferry({"run", path});
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_LT(took, 60) << r.out << r.err;
  std::string why = sql("SELECT error FROM stages WHERE run_id='bigenv-1' AND name='big'");
  EXPECT_NE(why.find("env 'BIG' is 2097152 bytes"), std::string::npos) << why << r.out << r.err;
  EXPECT_EQ(sql("SELECT state FROM stages WHERE run_id='bigenv-1' AND name='other'"), "succeeded\n");
  EXPECT_EQ(read_text(home_.path() + "/hosts/local/other.txt"), "fine\n");
  EXPECT_EQ(sql("SELECT count(*) FROM events WHERE run_id='bigenv-1' AND type='host.disconnected'"), "0\n");
}

// The review's trial: a 50 MiB `run:` (a heredoc of data) runs, read by the shell
// from a file beside the job's spec since exec(2) takes at most 128 KiB per argument.
TEST_F(LargeRequestTest, A50MiBRunCommandRuns) {
  std::string line(99, 'd');
  std::string data;
  while (data.size() < (50u << 20)) data += line + "\n";
  std::string path = work_.file("wf.yaml");
  write_text(path, "name: bigrun\nstages:\n  big:\n    run: |\n      cat > data.txt <<'EOF'\n" +
                       [&] {
                         std::string indented;
                         indented.reserve(data.size() * 107 / 100);
                         for (size_t at = 0; at < data.size(); at += 100) indented += "      " + data.substr(at, 100);
                         return indented;
                       }() +
                       "      EOF\n      echo ran > ran.txt\n");
  auto r = ferry({"run", path});
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(0, 2000) << r.err.substr(0, 2000);
  EXPECT_EQ(read_text(home_.path() + "/hosts/local/ran.txt"), "ran\n");
  EXPECT_TRUE(read_text(home_.path() + "/hosts/local/data.txt") == data) << "the heredoc arrived whole";
  EXPECT_EQ(sql("SELECT count(*) FROM events WHERE run_id='bigrun-1' AND type='host.disconnected'"), "0\n");
}

}  // namespace
}  // namespace ferry
