// The file ops' requests (protocol/ops/fs.h, recv.h): read back as written, with the
// wire keys the agent has always taken, and refused by name when a field is unknown,
// mistyped or a required one is missing.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace ferry::protocol
