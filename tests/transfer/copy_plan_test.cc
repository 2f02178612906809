// What a copy sender takes from the other side's replies (review F1, F2): the
// source's listing and hashes (read as the senders read them, through their
// protocol/ops/fs.h structs), the receiver's begin and commit replies. Faulty or
// hostile replies become errors or are ignored, never a path outside the copy,
// an index outside a file, or an exception.
#include "transfer/copy_plan.h"

#include <gtest/gtest.h>

#include "protocol/frame.h"

namespace ferry {
namespace {

constexpr int64_t kChunk = 4;

nlohmann::json dir_listing(const nlohmann::json& files) { return {{"type", "dir"}, {"files", files}}; }

// A listing reply as a sender takes it: read through FsListReply, then planned.
Result<CopyListing> plan_reply(const nlohmann::json& listing) {
  auto read = protocol::FsListReply::from_json(listing);
  if (!read.ok()) return read.status();
  return plan_copy(std::move(read).value(), "/src", "/dst", kChunk);
}

// An fs.hash reply's chunks as a sender takes them.
Status take_reply(const nlohmann::json& chunks, CopyFile* f) {
  auto read = protocol::FsHashReply::from_json({{"chunks", chunks}});
  if (!read.ok()) return read.status();
  return take_chunk_hashes(read->chunks, f);
}

TEST(CopyPlanTest, FolderEntriesMustStayInsideTheCopy) {
  auto ok = plan_reply(dir_listing({{{"path", "a/b.bin"}, {"size", 9}, {"mode", 0600}}}));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->files[0].dest(), "/dst/a/b.bin");
  EXPECT_EQ(ok->files[0].chunks, 3);
  EXPECT_EQ(ok->files[0].mode, 0600);
  for (const char* evil : {"../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a/.", "", "a/"}) {
    auto r = plan_reply(dir_listing({{{"path", evil}, {"size", 0}}}));
    EXPECT_FALSE(r.ok()) << "'" << evil << "' was taken";
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
      EXPECT_NE(r.status().message().find("/src"), std::string::npos) << r.status().message();
    }
  }
}

TEST(CopyPlanTest, ListingsOfTheWrongShapeOrImpossibleSizesAreRefused) {
  const nlohmann::json bad[] = {
      nlohmann::json::array(),
      {{"type", "dir"}},
      {{"type", 7}, {"files", nlohmann::json::array()}},
      {{"type", "fifo"}, {"files", nlohmann::json::array()}},
      dir_listing({{{"path", "a"}, {"size", -1}}}),
      dir_listing({{{"path", "a"}, {"size", int64_t{1} << 60}}}),
      dir_listing({{{"path", "a"}, {"size", "9"}}}),
      dir_listing({{{"path", 5}, {"size", 9}}}),
      dir_listing({{{"path", "a"}, {"size", 9}, {"mode", "rw"}}}),
      dir_listing({"just a string"}),
      {{"type", "file"}, {"files", {{{"path", "f"}, {"size", 1}}, {{"path", "g"}, {"size", 1}}}}},
  };
  for (const auto& listing : bad) {
    EXPECT_FALSE(plan_reply(listing).ok()) << listing.dump();
  }
}

TEST(CopyPlanTest, SourceHashesMustNameExactlyTheFilesChunks) {
  auto plan = plan_reply(dir_listing({{{"path", "f"}, {"size", 9}}}));
  ASSERT_TRUE(plan.ok());
  CopyFile f = plan->files[0];  // 3 chunks
  EXPECT_TRUE(take_reply({{"0", "h0"}, {"1", "h1"}, {"2", "h2"}}, &f).ok());
  EXPECT_EQ(f.hashes, (std::vector<std::string>{"h0", "h1", "h2"}));
  const nlohmann::json bad[] = {
      {{"0", "h0"}, {"1", "h1"}},                       // too few
      {{"0", "h0"}, {"1", "h1"}, {"100000000", "h2"}},  // out of range
      {{"0", "h0"}, {"1", "h1"}, {"-1", "h2"}},
      {{"0", "h0"}, {"1", "h1"}, {"x", "h2"}},
      {{"0", "h0"}, {"1", "h1"}, {"2", 7}},
      nlohmann::json::array({"h0", "h1", "h2"}),
  };
  for (const auto& chunks : bad) {
    CopyFile g = plan->files[0];
    EXPECT_FALSE(take_reply(chunks, &g).ok()) << chunks.dump();
  }
}

TEST(CopyPlanTest, ReceiverRepliesOutsideTheFileAreNotTaken) {
  auto plan = plan_reply(dir_listing({{{"path", "f"}, {"size", 9}}}));
  ASSERT_TRUE(plan.ok());
  CopyFile f = plan->files[0];
  apply_recv_begin(&f, protocol::RecvBeginReply{false, {{1, "h1"}, {7, "h7"}}});
  EXPECT_FALSE(f.dest_complete);
  EXPECT_EQ(f.dest_have, (std::map<int64_t, std::string>{{1, "h1"}}));
  EXPECT_TRUE(recv_commit_bad(protocol::RecvCommitReply{true, {}, ""}, f).empty());
  EXPECT_EQ(recv_commit_bad(protocol::RecvCommitReply{false, {2, 99, -1}, ""}, f), std::vector<int64_t>{2});
  // Not committed, and none of the file's chunks named: every chunk is sent again.
  EXPECT_EQ(recv_commit_bad(protocol::RecvCommitReply{false, {}, "disk"}, f), (std::vector<int64_t>{0, 1, 2}));
  // A reply of the wrong shape is refused as it is read, naming the field.
  auto begun = protocol::RecvBeginReply::from_json({{"complete", "yes"}, {"have", {{"1", "h1"}}}});
  ASSERT_FALSE(begun.ok());
  EXPECT_EQ(begun.status().message(), "the recv.begin reply's complete is a string, not true or false");
  auto committed = protocol::RecvCommitReply::from_json({{"committed", false}, {"bad", "all"}});
  ASSERT_FALSE(committed.ok());
  EXPECT_EQ(committed.status().message(), "the recv.commit reply's bad is a string, not an array");
}

TEST(CopyPlanTest, ErrorFramesOfTheWrongShapeBecomeStatusesNotExceptions) {
  protocol::Frame frame;
  frame.type = protocol::FrameType::kError;
  frame.header = {{"code", "x"}, {"message", 5}};
  Status s = protocol::status_from_error_frame(frame);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "agent error");
  frame.header = nlohmann::json::array();
  EXPECT_EQ(protocol::status_from_error_frame(frame).code(), StatusCode::kInternal);
  frame.header = {{"code", static_cast<int>(StatusCode::kNotFound)}, {"message", "gone"}};
  EXPECT_EQ(protocol::status_from_error_frame(frame).message(), "gone");
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

TEST(CopyPlanTest, ResumeQueuesWhatAReceiverLacksAndCountsWhatIsThere) {
  CopyFile f;
  f.size = 10;  // chunks of 4, 4 and 2 bytes
  f.chunks = 3;
  f.hashes.resize(3);
  f.dest_have = {{0, "h0"}, {2, "h2"}};
  std::map<int64_t, std::string> local_have = {{0, "h0"}};  // a second receiver lacking chunk 2
  std::vector<int64_t> queued;
  int64_t there = queue_missing_chunks(
      &f, 4, [&](int64_t c) { return !f.dest_have.count(c) || !local_have.count(c); },
      [&](int64_t c) { queued.push_back(c); });
  EXPECT_EQ(queued, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(f.remaining, 2);
  EXPECT_EQ(there, 4);
  EXPECT_EQ(f.hashes[0], "h0");  // held everywhere: the held hash stands for the source's
  EXPECT_EQ(f.hashes[2], "");
  EXPECT_EQ(held_indices({&f.dest_have, &local_have}), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(source_hashes(f), (std::map<int64_t, std::string>{{0, "h0"}, {1, ""}, {2, ""}}));
}

}  // namespace
}  // namespace ferry
