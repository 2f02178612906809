// The agent's request handler on mutated requests, decoded from the wire as serve()
// would: each gets a reply or an error frame with its id, never a crash, a hang or
// an abort. Real files and jobs in a temp folder; every absolute path a mutation
// produces is moved under that folder, so nothing outside it is touched.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include "agents/agent_server.h"
#include "base/file_hash.h"
#include "base/file_util.h"
#include "tests/fuzz/fuzz_rounds.h"
#include "tests/fuzz/random_input.h"
#include "tests/fuzz/wire_frame.h"
#include "tests/support/process.h"

namespace ferry::fuzz {
namespace {

struct RequestSeed {
  nlohmann::json header;
  std::string body;
};

class AgentRequestFuzzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    workdir_ = dir_.path() + "/a/b/work";
    ASSERT_TRUE(make_dirs(workdir_ + "/data/dir/sub").ok());
    std::string bytes(64 * 1024, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + 7);
    testing::write_text(workdir_ + "/data/file.bin", bytes);
    testing::write_text(workdir_ + "/data/dir/x", "x");
    testing::write_text(workdir_ + "/data/dir/sub/y", "yy");
    server_ = std::make_unique<AgentServer>(workdir_);
    protocol::Frame started = server_->handle(protocol::make_request(
        1, "job.start", {{"job", "fz"}, {"attempt", 1}, {"token", "t1"}, {"command", "echo hi"}}));
    ASSERT_EQ(started.type, protocol::FrameType::kReply) << started.header.dump();
  }

  // What a coordinator sends, one of each op (recv.* in the order of a copy).
  std::vector<RequestSeed> seeds() const {
    std::string chunk(64, 'c');
    std::string keep;
    for (const char* name : {"x", "sub/y"}) keep += std::string(name) + '\0';
    return {
        {{{"op", "hello"}}, ""},
        {{{"op", "ping"}}, ""},
        {{{"op", "host.info"}}, ""},
        {{{"op", "job.start"}, {"job", "fz2"}, {"attempt", 1}, {"token", "t"}, {"command", "true"}, {"cwd", "c"},
          {"env", {{"A", "1"}}}, {"timeout_s", 5}},
         ""},
        {{{"op", "job.status"}, {"job", "fz"}, {"attempt", 1}, {"token", "t1"}}, ""},
        {{{"op", "job.cancel"}, {"job", "fz"}, {"attempt", 1}, {"token", "t1"}, {"hard", false}}, ""},
        {{{"op", "log.read"}, {"job", "fz"}, {"attempt", 1}, {"offset", 0}, {"max", 100}}, ""},
        {{{"op", "fs.stat"}, {"path", "data/file.bin"}}, ""},
        {{{"op", "fs.list"}, {"path", "data/dir"}}, ""},
        {{{"op", "fs.read"}, {"path", "data/file.bin"}, {"offset", 4096}, {"length", 4096}}, ""},
        {{{"op", "fs.hash"}, {"path", "data/file.bin"}, {"chunk_size", 16384}, {"indices", {0, 2}}}, ""},
        {{{"op", "recv.prepare_dir"}, {"path", "out/d"}}, ""},
        {{{"op", "recv.begin"}, {"dest", "out/f"}, {"size", 100}, {"chunk_size", 64}, {"mode", 0644},
          {"owner", "fz 1 t1"}},
         ""},
        {{{"op", "recv.write"}, {"dest", "out/f"}, {"index", 0}, {"chunk_size", 64},
          {"hash", xxh128_hex(chunk.data(), chunk.size())}, {"owner", "fz 1 t1"}},
         chunk},
        {{{"op", "recv.commit"}, {"dest", "out/f"}, {"chunk_size", 64},
          {"chunks", {xxh128_hex(chunk.data(), chunk.size()), "00"}}, {"owner", "fz 1 t1"}},
         ""},
        {{{"op", "recv.finish_dir"}, {"path", "data/dir"}, {"manifest_hash", "m"}, {"prune", true}}, keep},
        {{{"op", "net.probe"}, {"address", "127.0.0.1"}, {"port", 1}, {"timeout_ms", 100}}, ""},
    };
  }

  // Keeps a mutated request inside the sandbox: absolute paths under it, a job's
  // cwd without "..", a probe on this machine, a command that does nothing.
  void confine(nlohmann::json& v, const std::string& key) const {
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) confine(it.value(), it.key());
    } else if (v.is_array()) {
      for (auto& e : v) confine(e, key);
    } else if (v.is_string()) {
      std::string s = v.get<std::string>();
      if (key == "address") s = "127.0.0.1";
      if (key == "command") s = s.size() % 2 ? "true" : "exit 3";
      if (key == "cwd" && s.find("..") != std::string::npos) s = "c";
      if (!s.empty() && s[0] == '/' && s.rfind(dir_.path(), 0) != 0) s = dir_.path() + s;
      if (s.find("/..") != std::string::npos && s[0] == '/') s = dir_.path() + "/dotdot";
      v = s;
    }
  }

  testing::TempDir dir_;
  std::string workdir_;
  std::unique_ptr<AgentServer> server_;
};

TEST_F(AgentRequestFuzzTest, MutatedRequestsGetARepliesOrErrorsNeverACrash) {
  const std::vector<RequestSeed> base = seeds();
  std::vector<std::string> wires;
  for (const auto& s : base) wires.push_back(wire_frame(1, 1, wire_text(s.header), s.body));
  FuzzPlan plan = fuzz_plan(6000);
  int replies = 0, errors = 0, undecodable = 0;
  for_each_round(plan, "AgentRequestFuzzTest", [&](Mutator& m, int) {
    m.sandbox = dir_.path();
    const RequestSeed& seed = base[m.below(base.size())];
    uint32_t id = static_cast<uint32_t>(m.next());
    std::string body = m.chance(20) ? m.mutate_bytes(seed.body, {}) : seed.body;
    std::string wire = m.chance(70) ? wire_frame(1, id, wire_text(m.mutate_json(seed.header)), body)
                                    : m.mutate_bytes(wire_frame(1, id, wire_text(seed.header), body), wires);
    protocol::FrameDecoder decoder;
    decoder.feed(wire.data(), wire.size());
    auto frame = decoder.next();
    if (!frame.ok() || !frame->has_value()) {
      ++undecodable;  // serve() answers these with an id-0 error and closes
      return;
    }
    protocol::Frame request = std::move(**frame);
    confine(request.header, "");
    protocol::Frame reply = server_->handle(request);
    EXPECT_EQ(reply.request_id, request.request_id);
    EXPECT_TRUE(reply.header.is_object());
    if (reply.type == protocol::FrameType::kError) {
      ++errors;
      EXPECT_FALSE(protocol::status_from_error_frame(reply).message().empty());
    } else {
      ++replies;
      EXPECT_EQ(reply.type, protocol::FrameType::kReply);
    }
  });
  expect_outcomes(plan, "requests",
                  {{"replies", replies, 100}, {"error replies", errors, 100}, {"undecodable", undecodable}});
}

}  // namespace
}  // namespace ferry::fuzz
