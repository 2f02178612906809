// Review F26: a relative path the coordinator sends is taken beneath the agent's
// workdir without following a symlink there. The workdir holds `models ->
// <outside>` (a user's link to a shared folder); every op that reads, writes or
// prunes through it is refused naming the path, and the outside folder keeps
// exactly what it held.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "agents/agent_server.h"
#include "base/beneath.h"
#include "tests/support/process.h"
#include "transfer/chunk_files.h"
#include "transfer/copied_files.h"

namespace ferry {
namespace {

using testing::TempDir;

class SymlinkedPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // What an earlier ferry copy left in the shared folder: a prune through the
    // link would remove `old.bin` (recorded as ferry's, absent from the copy).
    testing::write_text(outside_.file("old.bin"), "weights");
    testing::write_text(outside_.file("notes.txt"), "the team's");
    auto outside = open_dest_folder("", outside_.path(), /*create=*/false);
    ASSERT_TRUE(outside.ok()) << outside.status().message();
    ASSERT_TRUE(record_copied_files(*outside, {"old.bin"}).ok());
    ASSERT_EQ(::symlink(outside_.path().c_str(), work_.file("models").c_str()), 0);
  }
  Status call(const std::string& op, nlohmann::json args, std::string body = {}) {
    protocol::Frame reply = server_.handle(protocol::make_request(1, op, std::move(args), std::move(body)));
    return reply.type == protocol::FrameType::kError ? protocol::status_from_error_frame(reply) : Status();
  }
  // Refused, naming the path and the link.
  void expect_refused(const Status& s, const std::string& path) {
    EXPECT_FALSE(s.ok()) << path;
    EXPECT_NE(s.message().find("'" + path + "'"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("passes through a symlink ('models'"), std::string::npos) << s.message();
  }
  // The outside folder holds what it held, and nothing else.
  void expect_outside_untouched() {
    EXPECT_EQ(testing::read_text(outside_.file("old.bin")), "weights");
    EXPECT_EQ(testing::read_text(outside_.file("notes.txt")), "the team's");
    EXPECT_FALSE(testing::exists(outside_.file("x")));
    EXPECT_FALSE(testing::exists(outside_.file(kCompleteMarker)));
  }

  TempDir work_, outside_;
  AgentServer server_{work_.path()};
};

TEST_F(SymlinkedPathTest, WritesAndThePruneThroughASymlinkedFolderAreRefused) {
  expect_refused(call("recv.prepare_dir", {{"path", "models/x"}}), "models/x");
  expect_refused(call("recv.begin", {{"dest", "models/x/w.bin"}, {"size", 4}, {"chunk_size", 4}, {"mode", 0644}}),
                 "models/x/w.bin");
  expect_refused(call("recv.finish_dir", {{"path", "models"}, {"manifest_hash", "h"}, {"prune", true}},
                      encode_keep_list({"new.bin"})),
                 "models");
  expect_outside_untouched();
}

TEST_F(SymlinkedPathTest, ReadsThroughASymlinkedFolderAreRefused) {
  expect_refused(call("fs.read", {{"path", "models/notes.txt"}, {"offset", 0}, {"length", 4}}), "models/notes.txt");
  expect_refused(call("fs.hash", {{"path", "models/notes.txt"}, {"chunk_size", 4}}), "models/notes.txt");
  expect_refused(call("fs.list", {{"path", "models"}}), "models");
  expect_refused(call("fs.stat", {{"path", "models/notes.txt"}}), "models/notes.txt");
  // Review-4 P10: a watch's listing, of the link and of a folder through it.
  ASSERT_EQ(::mkdir(outside_.file("checkpoint-1").c_str(), 0755), 0);
  testing::write_text(outside_.file("checkpoint-1/w.bin"), "w");
  expect_refused(call("fs.scan", {{"path", "models"}, {"pattern", "checkpoint-*"}}), "models");
  expect_refused(call("fs.scan", {{"path", "models/checkpoint-1"}, {"pattern", "*"}}), "models/checkpoint-1");
  // The same folder named by its absolute path is the user's word: it is read.
  EXPECT_TRUE(call("fs.read", {{"path", outside_.file("notes.txt")}, {"offset", 0}, {"length", 4}}).ok());
  EXPECT_TRUE(call("fs.scan", {{"path", outside_.path()}, {"pattern", "checkpoint-*"}}).ok());
  expect_outside_untouched();
}

// Both ways of opening beneath a folder (openat2 and the O_NOFOLLOW walk for
// kernels without it) refuse a link anywhere on the way and open what is beneath.
TEST_F(SymlinkedPathTest, OpenBeneathRefusesALinkOnTheWayWithOrWithoutOpenat2) {
  ASSERT_EQ(::mkdir(work_.file("real").c_str(), 0755), 0);
  testing::write_text(work_.file("real/a.txt"), "a");
  ASSERT_EQ(::symlink("a.txt", work_.file("real/last").c_str()), 0);
  for (bool openat2 : {true, false}) {
    SCOPED_TRACE(openat2 ? "openat2" : "walk");
    EXPECT_TRUE(open_beneath(work_.path(), "real/a.txt", O_RDONLY, 0, openat2).ok());
    auto through = open_beneath(work_.path(), "models/notes.txt", O_RDONLY, 0, openat2);
    ASSERT_FALSE(through.ok());
    expect_refused(through.status(), "models/notes.txt");
    auto last = open_beneath(work_.path(), "real/last", O_RDONLY, 0, openat2);
    ASSERT_FALSE(last.ok());
    EXPECT_NE(last.status().message().find("passes through a symlink ('real/last'"), std::string::npos)
        << last.status().message();
    EXPECT_FALSE(open_beneath(work_.path(), "real/../models/notes.txt", O_RDONLY, 0, openat2).ok());
    auto created = open_beneath(work_.path(), "models/new.txt", O_WRONLY | O_CREAT, 0644, openat2);
    EXPECT_FALSE(created.ok());
  }
  EXPECT_FALSE(testing::exists(outside_.file("new.txt")));
}

}  // namespace
}  // namespace ferry
