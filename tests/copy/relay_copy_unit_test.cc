// The relay's logic (jobs/copy/relay_copy.h, through CopyStage) without processes:
// two hosts are in-process AgentServers over folders of the test
// (tests/support/agent_stage_env.h), so a copy runs in milliseconds and its error
// paths are reached by answering one call in the agent's place — a link lost in the
// middle of a write, a chunk that arrives corrupt, a source that refuses a read —
// and a second copy into the same folder prunes only what the first one wrote. The
// route's choice is here too: a host not on SSH makes an auto copy relay, and fails a
// direct one, named with its transport.
// The end-to-end copies with real agents are local_copy_test and testbed_copy_test.
#include <gtest/gtest.h>

#include <memory>

#include "jobs/copy/copy_stage.h"
#include "tests/copy/copy_test_util.h"
#include "tests/support/agent_stage_env.h"

namespace ferry {
namespace {

using copytest::compare_trees;

class RelayCopyUnitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.add_host("a", dir_.file("a"));
    env_.add_host("b", dir_.file("b"));
    // 2 shards of 2 chunks each, a config and an index of one chunk each.
    for (const auto& f : copytest::make_checkpoint(dir_.file("src"), 2, 3 << 20))
      chunks_ += copytest::chunks_of(f.size);
  }
  // Copies dir_/src (or `from`) on a to dir_/dst on b; returns how it ended.
  StageOutcome copy(const std::string& from = "") {
    CopySpec spec;
    spec.copy.from_host = "a";
    spec.copy.from = from.empty() ? dir_.file("src") : from;
    spec.copy.to_host = "b";
    spec.copy.to = dir_.file("dst");
    spec.copy.route = route_;
    spec.copy.from_transport = from_transport_;
    spec.copy.to_transport = to_transport_;
    spec.id = {"run.copy", ++attempt_, "token" + std::to_string(attempt_)};
    auto stage = std::make_shared<CopyStage>(env_, spec);
    StageOutcome out;
    bool done = false;
    stage->start([&](StageOutcome o) {
      out = std::move(o);
      done = true;
    });
    env_.io().restart();
    env_.io().run();
    EXPECT_TRUE(done) << "the copy never ended";
    return out;
  }
  testing::TempDir dir_;
  testing::AgentStageEnv env_;
  workflow::CopyRoute route_ = workflow::CopyRoute::kRelay;
  workflow::Transport from_transport_ = workflow::Transport::kLocal;
  workflow::Transport to_transport_ = workflow::Transport::kLocal;
  int attempt_ = 0;
  int64_t chunks_ = 0;  // of the source, counted from its files
};

TEST_F(RelayCopyUnitTest, CopiesAFolderThroughTheCoordinator) {
  StageOutcome o = copy();
  ASSERT_EQ(o.state, StageOutcome::State::kSucceeded) << o.error;
  EXPECT_EQ(compare_trees(dir_.file("src"), dir_.file("dst")), "");
  ASSERT_EQ(chunks_, 6);
  EXPECT_EQ(env_.calls["fs.read"], chunks_);  // each chunk read once
  EXPECT_EQ(env_.calls["recv.write"], chunks_);
  ASSERT_EQ(env_.events_of("copy.started").size(), 1u);
  EXPECT_EQ(env_.events_of("copy.started")[0]["route"], "relay");
}

// Direct needs SSH at both ends; with the destination local, auto relays and says why.
TEST_F(RelayCopyUnitTest, AnAutoCopyToAHostNotOnSshRelaysNamingItsTransport) {
  route_ = workflow::CopyRoute::kAuto;
  from_transport_ = workflow::Transport::kSsh;
  StageOutcome o = copy();
  ASSERT_EQ(o.state, StageOutcome::State::kSucceeded) << o.error;
  ASSERT_EQ(env_.events_of("copy.started").size(), 1u);
  EXPECT_EQ(env_.events_of("copy.started")[0]["route"], "relay");
  EXPECT_EQ(env_.events_of("copy.started")[0]["reason"], "'b' uses transport: local");
}

TEST_F(RelayCopyUnitTest, ADirectCopyFromAHostNotOnSshFailsNamingItsTransport) {
  route_ = workflow::CopyRoute::kDirect;
  to_transport_ = workflow::Transport::kSsh;
  StageOutcome o = copy();
  EXPECT_EQ(o.state, StageOutcome::State::kFailed);
  EXPECT_NE(o.error.find("route: direct needs both hosts on transport: ssh; 'a' uses transport: local"),
            std::string::npos)
      << o.error;
  EXPECT_TRUE(env_.events_of("copy.started").empty());
}

// The destination's link drops on the second write: that lane waits for it and the
// copy completes, every chunk written, nothing doubled in the result.
TEST_F(RelayCopyUnitTest, ALinkLostDuringAWriteIsRiddenOut) {
  int writes = 0;
  env_.fault = [&](const std::string& host, const std::string& op,
                   const nlohmann::json&) -> std::optional<Result<protocol::Frame>> {
    if (host == "b" && op == "recv.write" && ++writes == 2) return Result<protocol::Frame>(unavailable("link lost"));
    return std::nullopt;
  };
  StageOutcome o = copy();
  ASSERT_EQ(o.state, StageOutcome::State::kSucceeded) << o.error;
  EXPECT_EQ(compare_trees(dir_.file("src"), dir_.file("dst")), "");
  EXPECT_EQ(env_.calls["recv.write"], chunks_ + 1);  // the lost one, sent again
}

// A chunk the destination finds corrupt (its hash does not match) is sent again.
TEST_F(RelayCopyUnitTest, AChunkThatArrivesCorruptIsSentAgain) {
  bool corrupted = false;
  env_.fault = [&](const std::string& host, const std::string& op,
                   const nlohmann::json&) -> std::optional<Result<protocol::Frame>> {
    if (host == "b" && op == "recv.write" && !corrupted) {
      corrupted = true;
      return Result<protocol::Frame>(Status(StatusCode::kDataLoss, "chunk hash mismatch"));
    }
    return std::nullopt;
  };
  StageOutcome o = copy();
  ASSERT_EQ(o.state, StageOutcome::State::kSucceeded) << o.error;
  EXPECT_EQ(compare_trees(dir_.file("src"), dir_.file("dst")), "");
  auto resent = env_.events_of("copy.chunk_resent");
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_EQ(resent[0]["why"], "chunk hash mismatch");
}

// A source that refuses a read for good fails the copy, naming the file.
TEST_F(RelayCopyUnitTest, ASourceThatRefusesAReadFailsTheCopyNamingTheFile) {
  env_.fault = [&](const std::string& host, const std::string& op,
                   const nlohmann::json& args) -> std::optional<Result<protocol::Frame>> {
    if (host == "a" && op == "fs.read" && args.value("path", "").find("00002-of") != std::string::npos) {
      return Result<protocol::Frame>(Status(StatusCode::kPermissionDenied, "Permission denied"));
    }
    return std::nullopt;
  };
  StageOutcome o = copy();
  EXPECT_EQ(o.state, StageOutcome::State::kFailed);
  EXPECT_NE(o.error.find("model-00002-of-00002.safetensors: Permission denied"), std::string::npos) << o.error;
}

// A second copy into the same folder removes what the first one wrote and the new
// source lacks, and nothing else: the user's own file there survives.
TEST_F(RelayCopyUnitTest, ASecondCopyRemovesOnlyWhatTheFirstOneWrote) {
  ASSERT_EQ(copy().state, StageOutcome::State::kSucceeded);
  testing::write_text(dir_.file("dst/notes.txt"), "mine");
  ASSERT_EQ(std::remove(dir_.file("src/model-00002-of-00002.safetensors").c_str()), 0);
  StageOutcome o = copy();
  ASSERT_EQ(o.state, StageOutcome::State::kSucceeded) << o.error;
  EXPECT_FALSE(testing::exists(dir_.file("dst/model-00002-of-00002.safetensors")));
  EXPECT_EQ(testing::read_text(dir_.file("dst/notes.txt")), "mine");
  auto removed = env_.events_of("copy.stale_removed");
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0]["files"], nlohmann::json({"model-00002-of-00002.safetensors"}));
}

}  // namespace
}  // namespace ferry
