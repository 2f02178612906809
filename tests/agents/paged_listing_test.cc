// fs.list in pages: a folder of 25,000 files listed through the real agent op and
// the coordinator's reader (list_host_path), each frame encoded and decoded as on
// the wire. The listing is complete and in order, it took many pages, and each
// page honoured its limit and stayed far below the frame cap.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "agents/agent_server.h"
#include "tests/support/process.h"
#include "transfer/chunk_files.h"
#include "transfer/host_listing.h"

namespace ferry {
namespace {

using testing::TempDir;

constexpr int kFiles = 25000;
constexpr int64_t kPageFiles = 1000;

// The agent's reply as the coordinator receives it: encoded, then decoded (which
// puts the body's list back into the header).
Result<protocol::Frame> over_the_wire(const protocol::Frame& reply, size_t* bytes) {
  std::string wire = protocol::encode_frame(reply);
  *bytes = wire.size();
  protocol::FrameDecoder decoder;
  decoder.feed(wire.data(), wire.size());
  auto next = decoder.next();
  if (!next.ok()) return next.status();
  if (reply.type == protocol::FrameType::kError) return protocol::status_from_error_frame(**next);
  return std::move(**next);
}

TEST(PagedListingTest, AFolderOf25000FilesComesInOrderedPagesEachWithinItsLimit) {
  TempDir work;
  // Two levels, and names whose plain string order differs from the walk's
  // ("s-1" sorts before "s/..." as a string, after it component by component).
  ASSERT_EQ(::mkdir(work.file("ckpt").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(work.file("ckpt/s").c_str(), 0755), 0);
  std::vector<std::string> expected;
  for (int i = 0; i < kFiles; ++i) {
    std::string rel = (i % 2 ? "s/shard-" : "s-") + std::to_string(i);
    testing::write_text(work.file("ckpt/" + rel), "x");
    expected.push_back(rel);
  }
  std::sort(expected.begin(), expected.end(), listing_order);

  AgentServer server(work.path());
  int pages = 0;
  size_t largest_page = 0;
  uint32_t id = 0;
  ListCall call = [&](nlohmann::json args, std::function<void(Result<protocol::Frame>)> reply) {
    size_t bytes = 0;
    auto r = over_the_wire(server.handle(protocol::make_request(++id, "fs.list", std::move(args))), &bytes);
    largest_page = std::max(largest_page, bytes);
    if (r.ok()) {
      EXPECT_LE(r->header["files"].size(), static_cast<size_t>(kPageFiles));
    }
    reply(std::move(r));
  };
  Result<protocol::FsListReply> listing = invalid_argument("never answered");
  list_host_path(
      call, "ckpt", "a:ckpt", [&](Result<protocol::FsListReply> r) { listing = std::move(r); }, kPageFiles, &pages);
  ASSERT_TRUE(listing.ok()) << listing.status().message();
  EXPECT_EQ(listing->type, protocol::FsType::kDir);
  std::vector<std::string> got;
  for (const auto& f : listing->files) got.push_back(f.path);
  EXPECT_EQ(got, expected);  // complete, each once, in the walk's order
  EXPECT_EQ(pages, kFiles / kPageFiles);
  // A page of 1000 short names is tens of KiB: far below the 64 MiB frame cap.
  EXPECT_LT(largest_page, size_t{256} << 10);
}

TEST(PagedListingTest, APageHoldsAtMostItsLimitAndTheNextStartsAfterTheLastPath) {
  TempDir work;
  ASSERT_EQ(::mkdir(work.file("ckpt").c_str(), 0755), 0);
  for (int i = 0; i < 5; ++i) testing::write_text(work.file("ckpt/f" + std::to_string(i)), "x");
  AgentServer server(work.path());
  size_t bytes = 0;
  auto r = over_the_wire(server.handle(protocol::make_request(1, "fs.list", {{"path", "ckpt"}, {"limit", 2}})), &bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->header["files"].size(), 2u);
  EXPECT_EQ(r->header["more"], true);
  r = over_the_wire(
      server.handle(protocol::make_request(2, "fs.list", {{"path", "ckpt"}, {"after", "f3"}, {"limit", 2}})), &bytes);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->header["files"].size(), 1u);
  EXPECT_EQ(r->header["files"][0]["path"], "f4");
  EXPECT_EQ(r->header["more"], false);
}

// A host whose pages repeat themselves (a lying or broken agent) ends the listing
// with an error instead of looping forever.
TEST(PagedListingTest, PagesThatDoNotMoveOnEndTheListingWithAnError) {
  int pages = 0;
  ListCall call = [&](nlohmann::json, std::function<void(Result<protocol::Frame>)> reply) {
    protocol::Frame f = protocol::make_reply(
        1, {{"type", "dir"}, {"files", {{{"path", "a"}, {"size", 1}, {"mode", 0644}}}}, {"more", true}});
    reply(std::move(f));
  };
  Result<protocol::FsListReply> listing = protocol::FsListReply();
  list_host_path(
      call, "ckpt", "a:ckpt", [&](Result<protocol::FsListReply> r) { listing = std::move(r); }, 0, &pages);
  ASSERT_FALSE(listing.ok());
  EXPECT_NE(listing.status().message().find("out of order at 'a'"), std::string::npos) << listing.status().message();
  EXPECT_EQ(pages, 2);
}

// A page the coordinator cannot read (a key renamed on one side) ends the listing
// naming the op and the field.
TEST(PagedListingTest, APageWithAnUnknownFieldEndsTheListingNamingIt) {
  ListCall call = [&](nlohmann::json, std::function<void(Result<protocol::Frame>)> reply) {
    reply(protocol::make_reply(1, {{"type", "dir"}, {"files", {{{"path", "a"}, {"bytes", 1}}}}}));
  };
  Result<protocol::FsListReply> listing = protocol::FsListReply();
  list_host_path(call, "ckpt", "a:ckpt", [&](Result<protocol::FsListReply> r) { listing = std::move(r); });
  ASSERT_FALSE(listing.ok());
  EXPECT_EQ(listing.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(listing.status().message(), "listing a:ckpt: the fs.list reply's files[0].size is missing");
}

}  // namespace
}  // namespace ferry
