// The file ops' requests and replies (protocol/ops/fs.h, recv.h): read back as
// written, with the wire keys the agent has always used, and refused by name when a
// field is unknown, mistyped or a required one is missing.
#include <gtest/gtest.h>

#include <utility>

#include "protocol/ops/fs.h"
#include "protocol/ops/recv.h"

namespace ferry::protocol {
namespace {

TEST(FileOpsTest, RecvBeginLeavesOutWhatIsNotKnown) {
  RecvBeginArgs a;
  a.dest = "out/model.bin";
  a.size = 10;
  a.chunk_size = 4;
  a.mode = 0600;
  EXPECT_EQ(a.to_json(), nlohmann::json::parse(R"({"dest":"out/model.bin","size":10,"chunk_size":4,"mode":384})"));
  a.owner = "alice";
  a.file_hash = "ab";
  auto back = RecvBeginArgs::from_json(a.to_json());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->owner, "alice");
  EXPECT_EQ(back->file_hash, "ab");
  EXPECT_EQ(back->mode, 0600);
}

TEST(FileOpsTest, ListsAndOptionalPagesReadBack) {
  FsHashArgs h{"src.bin", 1 << 20, {0, 5, 9}};
  auto hb = FsHashArgs::from_json(h.to_json());
  ASSERT_TRUE(hb.ok()) << hb.status().message();
  EXPECT_EQ(hb->indices, h.indices);
  RecvCommitArgs c{"dst.bin", 4, {"aa", "bb"}, ""};
  auto cb = RecvCommitArgs::from_json(c.to_json());
  ASSERT_TRUE(cb.ok()) << cb.status().message();
  EXPECT_EQ(cb->chunks, c.chunks);
  auto l = FsListArgs::from_json({{"op", "fs.list"}, {"path", "data"}});
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_FALSE(l->limit.has_value());
  const FsListArgs page{"data", "", 50};
  EXPECT_EQ(page.to_json(), nlohmann::json::parse(R"({"path":"data","limit":50})"));
}

TEST(FileOpsTest, UnknownMistypedAndMissingFieldsAreNamed) {
  auto unknown = RecvWriteArgs::from_json({{"dest", "d"}, {"index", 0}, {"hash", "h"}, {"ownr", "bob"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "the recv.write request's ownr is not a known field");
  auto mistyped = FsReadArgs::from_json({{"path", "f"}, {"offset", "0"}});
  ASSERT_FALSE(mistyped.ok());
  EXPECT_EQ(mistyped.status().message(), "the fs.read request's offset is a string, not an integer");
  auto item = RecvCommitArgs::from_json({{"dest", "d"}, {"chunks", {"aa", 7}}});
  ASSERT_FALSE(item.ok());
  EXPECT_EQ(item.status().message(), "the recv.commit request's chunks[1] is a number, not a string");
  auto missing = FsScanArgs::from_json({{"path", "ckpts"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "the fs.scan request's pattern is missing");
}

TEST(FileOpsTest, RepliesReadBackWithTheirWireKeys) {
  FsStatReply st{true, "/w/a.bin", FsType::kFile, 9, 1, 1000001, 42};
  EXPECT_EQ(st.to_json(), nlohmann::json::parse(R"({"exists":true,"path":"/w/a.bin","type":"file","size":9,
                                                    "mtime_ms":1,"mtime_ns":1000001,"ino":42})"));
  auto stb = FsStatReply::from_json(st.to_json());
  ASSERT_TRUE(stb.ok()) << stb.status().message();
  EXPECT_EQ(stb->mtime_ns, 1000001);
  EXPECT_EQ(stb->ino, 42);
  // Nothing there: only exists and path are said, and that reads back.
  const FsStatReply gone{false, "/w/none"};
  EXPECT_EQ(gone.to_json(), nlohmann::json::parse(R"({"exists":false,"path":"/w/none"})"));
  ASSERT_TRUE(FsStatReply::from_json(gone.to_json()).ok());

  FsListReply page{FsType::kDir, {{"a/b.bin", 9, 0600, 5, 7}, {"c", 0, 0644, 6, 8}}, true};
  EXPECT_EQ(page.to_json(), nlohmann::json::parse(R"({"type":"dir","more":true,"files":[
      {"path":"a/b.bin","size":9,"mode":384,"mtime_ns":5,"ino":7},{"path":"c","size":0,"mode":420,"mtime_ns":6,"ino":8}]})"));
  auto pb = FsListReply::from_json(page.to_json());
  ASSERT_TRUE(pb.ok()) << pb.status().message();
  EXPECT_EQ(pb->type, FsType::kDir);
  ASSERT_EQ(pb->files.size(), 2u);
  EXPECT_EQ(pb->files[0].mode, 0600);
  EXPECT_EQ(pb->files[1].ino, 8);
  EXPECT_TRUE(pb->more);

  FsScanReply scan{77, {{"checkpoint-5", 3, {{"config.json", 10, 2}}, true}, {"checkpoint-6", 4, {}, false}}, "x"};
  EXPECT_EQ(scan.to_json(), nlohmann::json::parse(R"({"now_ns":77,"next":"x","folders":[
      {"name":"checkpoint-5","mtime_ns":3,"files":[{"path":"config.json","size":10,"mtime_ns":2}],"truncated":true},
      {"name":"checkpoint-6","mtime_ns":4,"files":[]}]})"));
  auto sb = FsScanReply::from_json(scan.to_json());
  ASSERT_TRUE(sb.ok()) << sb.status().message();
  ASSERT_EQ(sb->folders.size(), 2u);
  EXPECT_TRUE(sb->folders[0].truncated);
  EXPECT_FALSE(sb->folders[1].truncated);
  EXPECT_EQ(sb->folders[0].files[0].size, 10);

  const FsReadReply read{"00ff", 4};
  EXPECT_EQ(read.to_json(), nlohmann::json::parse(R"({"hash":"00ff","length":4})"));
  ASSERT_TRUE(FsReadReply::from_json(read.to_json()).ok());

  FsHashReply hashes{{{0, "h0"}, {12, "h12"}}};
  EXPECT_EQ(hashes.to_json(), nlohmann::json::parse(R"({"chunks":{"0":"h0","12":"h12"}})"));
  auto hb = FsHashReply::from_json(hashes.to_json());
  ASSERT_TRUE(hb.ok()) << hb.status().message();
  EXPECT_EQ(hb->chunks, hashes.chunks);
}

TEST(FileOpsTest, RepliesWithUnknownMistypedOrMissingFieldsAreRefusedByName) {
  const std::pair<nlohmann::json (*)(), std::string> cases[] = {
      {[] {
         return nlohmann::json{{"exists", true}, {"type", "file"}, {"size", "9"}};
       },
       "the fs.stat reply's size is a string, not an integer"},
      {[] {
         return nlohmann::json{{"exists", true}, {"type", "fifo"}, {"size", 9}};
       },
       "the fs.stat reply's type is 'fifo', not one of file, dir, other"},
      {[] {
         return nlohmann::json{{"path", "/x"}};
       },
       "the fs.stat reply's exists is missing"},
      {[] {
         return nlohmann::json{{"exists", false}, {"path", "/x"}, {"sise", 3}};
       },
       "the fs.stat reply's sise is not a known field"},
  };
  for (const auto& [reply, message] : cases) {
    auto r = FsStatReply::from_json(reply());
    ASSERT_FALSE(r.ok()) << reply().dump();
    EXPECT_EQ(r.status().message(), message);
  }
  auto list =
      FsListReply::from_json(nlohmann::json::parse(R"({"type":"dir","files":[{"path":"a","size":1,"uid":0}]})"));
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().message(), "the fs.list reply's files[0].uid is not a known field");
  auto untyped = FsListReply::from_json(nlohmann::json::parse(R"({"files":[]})"));
  ASSERT_FALSE(untyped.ok());
  EXPECT_EQ(untyped.status().message(), "the fs.list reply's type is missing");
  auto scan =
      FsScanReply::from_json(nlohmann::json::parse(R"({"now_ns":1,"folders":[{"name":"c","files":[{"size":1}]}]})"));
  ASSERT_FALSE(scan.ok());
  EXPECT_EQ(scan.status().message(), "the fs.scan reply's folders[0].files[0].path is missing");
  auto read = FsReadReply::from_json({{"hash", "ab"}});
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().message(), "the fs.read reply's length is missing");
  auto index = FsHashReply::from_json(nlohmann::json::parse(R"({"chunks":{"0":"h0","-1":"h"}})"));
  ASSERT_FALSE(index.ok());
  EXPECT_EQ(index.status().message(), "the fs.hash reply's chunks names '-1', not an index");
  auto hash = FsHashReply::from_json(nlohmann::json::parse(R"({"chunks":{"0":7}})"));
  ASSERT_FALSE(hash.ok());
  EXPECT_EQ(hash.status().message(), "the fs.hash reply's chunks.0 is a number, not a string");
}

// A number wider than its field is refused, not narrowed: a mode of 2^32 + 0644 read
// into an int would pass for 0644.
TEST(FileOpsTest, AnIntegerWiderThanItsFieldIsRefusedNotNarrowed) {
  auto wide = FsListReply::from_json(
      nlohmann::json::parse(R"({"type":"file","files":[{"path":"a","size":1,"mode":4294967716}]})"));
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.status().message(), "the fs.list reply's files[0].mode is 4294967716, out of range");
  auto negative = FsListReply::from_json(
      nlohmann::json::parse(R"({"type":"file","files":[{"path":"a","size":1,"mode":-2147483649}]})"));
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().message(), "the fs.list reply's files[0].mode is -2147483649, out of range");
  auto fits = FsListReply::from_json(
      nlohmann::json::parse(R"({"type":"file","files":[{"path":"a","size":9007199254740993,"mode":420}]})"));
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ(fits->files[0].mode, 0644);
  EXPECT_EQ(fits->files[0].size, 9007199254740993);
}

TEST(FileOpsTest, RecvRepliesReadBackAndACommittedOneSaysOnlyThat) {
  const RecvBeginReply begun{false, {{0, "h0"}, {3, "h3"}}};
  EXPECT_EQ(begun.to_json(), nlohmann::json::parse(R"({"complete":false,"have":{"0":"h0","3":"h3"}})"));
  auto bb = RecvBeginReply::from_json(begun.to_json());
  ASSERT_TRUE(bb.ok()) << bb.status().message();
  EXPECT_EQ(bb->have, begun.have);
  EXPECT_EQ((RecvCommitReply{true, {}, ""}.to_json()), nlohmann::json::parse(R"({"committed":true})"));
  const RecvCommitReply failed{false, {1, 4}, "chunk 1 differs"};
  EXPECT_EQ(failed.to_json(), nlohmann::json::parse(R"({"committed":false,"bad":[1,4],"error":"chunk 1 differs"})"));
  auto fb = RecvCommitReply::from_json(failed.to_json());
  ASSERT_TRUE(fb.ok()) << fb.status().message();
  EXPECT_EQ(fb->bad, failed.bad);
  EXPECT_EQ(fb->error, failed.error);
  auto unknown = RecvCommitReply::from_json({{"committed", true}, {"bytes", 5}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "the recv.commit reply's bytes is not a known field");
  auto missing = RecvBeginReply::from_json({{"have", nlohmann::json::object()}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "the recv.begin reply's complete is missing");
}

}  // namespace
}  // namespace ferry::protocol
