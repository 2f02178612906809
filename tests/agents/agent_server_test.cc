// The agent's request handler on real processes and files: detached jobs, the
// journal, attempt tokens, logs, and bad requests.
#include "agents/agent_server.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "base/file_util.h"
#include "tests/support/process.h"
#include "transfer/chunk_files.h"

namespace ferry {
namespace {

using testing::TempDir;
using testing::wait_until;

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

TEST_F(AgentServerTest, JobOutlivesTheAgentAndANewAgentReadsItsFate) {
  std::string release = dir_.file("release");
  start("run-1.long", 1, "tok", "while [ ! -f '" + release + "' ]; do sleep 0.05; done; exit 3");
  {
    // A second agent over the same workdir (the first "died") sees it running...
    AgentServer other(dir_.path());
    auto r = other.handle(protocol::make_request(1, "job.status", {{"job", "run-1.long"}, {"attempt", 1}, {"token", "tok"}}));
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

TEST_F(AgentServerTest, TimeoutKillsTheWholeProcessGroup) {
  std::string pidfile = dir_.file("bg.pid");
  start("r.t", 1, "t", "sleep 300 & echo $! > '" + pidfile + "'; sleep 300", 0.5);
  auto rec = wait_exit("r.t", 1, "t");
  EXPECT_EQ(rec["timed_out"], true);
  pid_t bg = std::stoi(testing::read_text(pidfile));
  EXPECT_TRUE(wait_until([&] { return !testing::process_running(bg); }, std::chrono::seconds(10)))
      << "background child " << bg << " survived the timeout";
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
  EXPECT_FALSE(call("job.start", {{"job", "ok"}, {"attempt", 1}, {"token", "t"}, {"command", "true"}, {"timeout_s", "soon"}}).ok());
  EXPECT_FALSE(call("job.start", {{"job", "ok"}, {"attempt", 1}, {"token", "t"}, {"command", "true"}, {"env", {{"A", 1}}}}).ok());
  EXPECT_FALSE(call("log.read", {{"job", "ok"}, {"attempt", 1}, {"offset", -5}}).ok());
  EXPECT_FALSE(call("job.status", {{"job", "never"}, {"attempt", 1}, {"token", "t"}}).ok());
  protocol::Frame reply = server_.handle(protocol::make_reply(9, {}));
  EXPECT_EQ(reply.type, protocol::FrameType::kError);
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
      protocol::encode_frame(protocol::make_request(1, "recv.begin", {{"dest", "out.bin"}, {"size", size},
                                                                      {"chunk_size", 2 << 20}, {"mode", 0644}})) +
      protocol::encode_frame(protocol::make_request(
          2, "recv.write", {{"dest", "out.bin"}, {"index", 0}, {"chunk_size", 2 << 20}, {"hash", hash}}, chunk)) +
      protocol::encode_frame(protocol::make_request(3, "fs.read", {{"path", "src.bin"}, {"offset", 0}, {"length", size}}));
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

}  // namespace
}  // namespace ferry
