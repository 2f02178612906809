// Review F26: the receiver writes in the destination folder it opened, not in
// whatever the folder's path names by the time it writes. Each test opens (and so
// checks) the folder beneath a workdir, then swaps it for a symlink to an outside
// folder — the real folder renamed away, the link put at its name — and only then
// writes: nothing lands outside, and the bytes land in the folder that was checked.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "base/beneath.h"
#include "base/file_hash.h"
#include "tests/support/process.h"
#include "transfer/chunk_files.h"
#include "transfer/dest_folder.h"

namespace ferry {
namespace {

constexpr int64_t kChunk = 4;

std::string chunk_hash(const std::string& bytes) { return xxh128_hex(bytes.data(), bytes.size()); }

// The names in a folder, "." and ".." left out.
std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return {"<cannot read " + dir + ">"};
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  return names;
}

class SwappedFolderTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::mkdir(work_.file("models").c_str(), 0755), 0); }
  // models/ becomes checked/, and models -> <outside> takes its name.
  void swap_for_symlink() {
    ASSERT_EQ(::rename(work_.file("models").c_str(), work_.file("checked").c_str()), 0);
    ASSERT_EQ(::symlink(outside_.path().c_str(), work_.file("models").c_str()), 0);
  }

  testing::TempDir work_, outside_;
};

TEST_F(SwappedFolderTest, AFileIsWrittenInTheFolderThatWasOpenedNotThroughTheLinkSwappedIn) {
  std::string name;
  auto dir = open_dest_parent(work_.path(), "models/w.bin", /*create=*/true, &name);
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  swap_for_symlink();

  const std::string data = "abcdefgh";
  const std::vector<std::string> hashes = {chunk_hash("abcd"), chunk_hash("efgh")};
  auto begun = receive_begin(*dir, name, 8, kChunk, 0644, "");
  ASSERT_TRUE(begun.ok()) << begun.status().message();
  for (int64_t i = 0; i < 2; ++i) {
    Status w = receive_write(*dir, name, i, kChunk, hashes[static_cast<size_t>(i)], data.substr(i * kChunk, kChunk));
    ASSERT_TRUE(w.ok()) << w.message();
  }
  std::vector<int64_t> bad;
  Status c = receive_commit(*dir, name, kChunk, hashes, &bad);
  ASSERT_TRUE(c.ok()) << c.message();

  EXPECT_EQ(names_in(outside_.path()), std::vector<std::string>{}) << "nothing is written through the link";
  EXPECT_EQ(testing::read_text(work_.file("checked/w.bin")), data);
  EXPECT_FALSE(testing::exists(work_.file("checked/w.bin.ferry-part")));
}

TEST_F(SwappedFolderTest, AFolderCopyIsPreparedFinishedAndPrunedInTheFolderThatWasOpened) {
  // What the link leads to looks like an earlier copy's folder: a prune through
  // the link would remove its `old.bin`, a marker would claim it complete.
  ASSERT_EQ(::mkdir(outside_.file("x").c_str(), 0755), 0);
  testing::write_text(outside_.file("x/old.bin"), "the team's");
  auto theirs = open_dest_folder("", outside_.file("x"), /*create=*/false);
  ASSERT_TRUE(theirs.ok()) << theirs.status().message();
  ASSERT_TRUE(record_copied_files(*theirs, {"old.bin"}).ok());
  const std::string their_record = testing::read_text(outside_.file(std::string("x/") + kCopiedFilesName));

  auto dir = open_dest_folder(work_.path(), "models/x", /*create=*/true);
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  swap_for_symlink();
  const std::vector<std::string> files = {"new.bin"};
  Status p = receive_prepare_dir(*dir, &files);
  ASSERT_TRUE(p.ok()) << p.message();
  testing::write_text(work_.file("checked/x/new.bin"), "new");
  PruneReport pruned;
  Status f = receive_finish_dir(*dir, "hash", &files, &pruned);
  ASSERT_TRUE(f.ok()) << f.message();

  EXPECT_EQ(testing::read_text(outside_.file("x/old.bin")), "the team's");
  EXPECT_EQ(testing::read_text(outside_.file(std::string("x/") + kCopiedFilesName)), their_record);
  EXPECT_FALSE(testing::exists(outside_.file(std::string("x/") + kCompleteMarker)));
  EXPECT_EQ(testing::read_text(work_.file(std::string("checked/x/") + kCompleteMarker)), "hash\n");
  EXPECT_TRUE(testing::exists(work_.file(std::string("checked/x/") + kCopiedFilesName)));
}

TEST_F(SwappedFolderTest, ASymlinkOnTheWayIsRefusedByNameAndNothingIsMadeBeyondIt) {
  swap_for_symlink();
  std::string name;
  auto dir = open_dest_parent(work_.path(), "models/sub/w.bin", /*create=*/true, &name);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("the path 'models/sub/w.bin' passes through a symlink ('models'"),
            std::string::npos)
      << dir.status().message();
  EXPECT_EQ(names_in(outside_.path()), std::vector<std::string>{}) << "no folder is made through the link";

  // Missing folders are made one by one beneath the workdir.
  auto fresh = open_dest_parent(work_.path(), "checked/a/b/w.bin", /*create=*/true, &name);
  ASSERT_TRUE(fresh.ok()) << fresh.status().message();
  EXPECT_EQ(name, "w.bin");
  EXPECT_EQ(fresh->shown(name), work_.file("checked/a/b/w.bin"));
  struct stat st;
  EXPECT_TRUE(::stat(work_.file("checked/a/b").c_str(), &st) == 0 && S_ISDIR(st.st_mode));
}

// The push's side (agents/push.cc): it holds its source folder open from the listing
// on, and opens each file beneath that descriptor, so a source folder swapped for a
// symlink after the listing is never read through.
TEST_F(SwappedFolderTest, AFileOpenedBeneathAHeldFolderIsReadFromItNotThroughTheLinkSwappedIn) {
  ASSERT_EQ(::mkdir(work_.file("models/sub").c_str(), 0755), 0);
  testing::write_text(work_.file("models/sub/w.bin"), "listed");
  ASSERT_EQ(::mkdir(outside_.file("sub").c_str(), 0755), 0);
  testing::write_text(outside_.file("sub/w.bin"), "outside");
  auto held = open_dir_beneath(work_.path(), "models", /*create=*/false);
  ASSERT_TRUE(held.ok()) << held.status().message();
  swap_for_symlink();

  for (bool openat2 : {true, false}) {
    auto fd = open_beneath_at(held->get(), work_.file("models"), "sub/w.bin", O_RDONLY, 0, openat2);
    ASSERT_TRUE(fd.ok()) << fd.status().message();
    char buf[16] = {};
    ssize_t n = ::pread(fd->get(), buf, sizeof buf, 0);
    EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "listed") << "openat2 " << openat2;
  }
}

}  // namespace
}  // namespace ferry
