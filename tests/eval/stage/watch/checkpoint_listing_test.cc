// The watch's own listing (agents/checkpoint_listing.h) over a real folder: what a
// trainer leaves beside and inside its checkpoints (links, a FIFO, a socket) is
// skipped, not refused; the listing stays two levels deep; pages join up; a
// relative folder is listed only beneath the workdir, never through a symlink.
#include "agents/checkpoint_listing.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::write_text;

std::vector<std::string> paths_of(const protocol::ScannedFolder& folder) {
  std::vector<std::string> out;
  for (const auto& f : folder.files) out.push_back(f.path);
  return out;
}

TEST(CheckpointListingTest, LinksFifosAndSocketsAreSkippedNotRefused) {
  testing::TempDir d;
  ASSERT_EQ(::mkdir(d.file("checkpoint-1").c_str(), 0755), 0);
  write_text(d.file("checkpoint-1/config.json"), "{}");
  ASSERT_EQ(::symlink("config.json", d.file("checkpoint-1/link.json").c_str()), 0);
  ASSERT_EQ(::symlink("checkpoint-1", d.file("checkpoint-latest").c_str()), 0);  // matches the pattern
  ASSERT_EQ(::symlink("nowhere", d.file("checkpoint-9").c_str()), 0);            // dangling
  ASSERT_EQ(::mkfifo(d.file("checkpoint-fifo").c_str(), 0600), 0);
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", d.file("checkpoint-sock").c_str());
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);

  auto r = list_checkpoints("", d.path(), "checkpoint-*", "", kMaxScanPageEntries);
  ::close(sock);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->folders.size(), 1u) << r->to_json().dump();
  EXPECT_EQ(r->folders[0].name, "checkpoint-1");
  EXPECT_EQ(paths_of(r->folders[0]), std::vector<std::string>{"config.json"});
  EXPECT_EQ(r->next, "");
  EXPECT_GT(r->now_ns, 0);
}

TEST(CheckpointListingTest, TwoLevelsDeepAndADeeperFolderIsOneEntry) {
  testing::TempDir d;
  for (const char* dir : {"ck-1", "ck-1/global_step1", "ck-1/global_step1/shards", "other"}) {
    ASSERT_EQ(::mkdir(d.file(dir).c_str(), 0755), 0);
  }
  write_text(d.file("ck-1/config.json"), "{}");
  write_text(d.file("ck-1/global_step1/optim.pt"), "1234");
  write_text(d.file("ck-1/global_step1/shards/0.pt"), "5");
  write_text(d.file("other/config.json"), "{}");
  auto r = list_checkpoints("", d.path(), "ck-*", "", kMaxScanPageEntries);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->folders.size(), 1u);
  EXPECT_EQ(paths_of(r->folders[0]),
            (std::vector<std::string>{"config.json", "global_step1/optim.pt", "global_step1/shards/"}));
  EXPECT_EQ(r->folders[0].files[1].size, 4);
}

TEST(CheckpointListingTest, PagesStopAtTheirSizeAndJoinUp) {
  testing::TempDir d;
  for (int i = 0; i < 5; ++i) {
    const std::string ck = d.file("checkpoint-" + std::to_string(i));
    ASSERT_EQ(::mkdir(ck.c_str(), 0755), 0);
    write_text(ck + "/a", "x");
    write_text(ck + "/b", "y");
  }
  std::vector<std::string> seen;
  std::string after;
  int pages = 0;
  do {
    auto r = list_checkpoints("", d.path(), "checkpoint-*", after, 5);  // 3 entries a folder
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_LE(r->folders.size(), 2u);
    for (const auto& f : r->folders) seen.push_back(f.name);
    after = r->next;
    ASSERT_LT(++pages, 10);
  } while (!after.empty());
  EXPECT_EQ(seen,
            (std::vector<std::string>{"checkpoint-0", "checkpoint-1", "checkpoint-2", "checkpoint-3", "checkpoint-4"}));
  EXPECT_EQ(pages, 3);
}

// Review-4 P10: a relative `from` is opened beneath the workdir like every other
// op's path: through a symlinked folder (`runs -> <elsewhere>`) it is refused, naming
// the link, instead of listed (each checkpoint in it would then be refused by the copy).
TEST(CheckpointListingTest, AFromThroughASymlinkedFolderIsRefusedNamingTheLink) {
  testing::TempDir work, elsewhere;
  ASSERT_EQ(::mkdir(elsewhere.file("out").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(elsewhere.file("out/checkpoint-1").c_str(), 0755), 0);
  write_text(elsewhere.file("out/checkpoint-1/model.safetensors"), "w");
  ASSERT_EQ(::symlink(elsewhere.path().c_str(), work.file("runs").c_str()), 0);
  for (const char* from : {"runs", "runs/out"}) {
    auto r = list_checkpoints(work.path(), from, "checkpoint-*", "", 10);
    ASSERT_FALSE(r.ok()) << from << ": " << r->to_json().dump();
    EXPECT_NE(r.status().message().find("'" + std::string(from) + "' passes through a symlink ('runs'"),
              std::string::npos)
        << r.status().message();
  }
  // Named by its absolute path, the same folder is the user's word and is listed.
  auto r = list_checkpoints(work.path(), elsewhere.file("out"), "checkpoint-*", "", 10);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->folders.size(), 1u) << r->to_json().dump();
}

TEST(CheckpointListingTest, AFolderThatIsNotThereIsNotFound) {
  testing::TempDir d;
  auto r = list_checkpoints("", d.file("missing"), "checkpoint-*", "", 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ferry
