// The folder copy's prune on real files: it removes only what an earlier ferry copy
// recorded there and the new copy lacks; a user's files, `.ferry/` journals and
// anything behind a symlink stay, and are named.
#include "transfer/copied_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

#include "base/file_util.h"
#include "tests/support/process.h"
#include "transfer/chunk_files.h"

namespace ferry {
namespace {

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// One folder copy into `dir` as the receiver sees it: prepare (recording what
// comes), the files written, then the finish that prunes.
PruneReport copy_into(const std::string& dir, const std::vector<std::string>& files) {
  Status p = receive_prepare_dir(dir, &files);
  EXPECT_TRUE(p.ok()) << p.message();
  for (const auto& f : files) {
    EXPECT_TRUE(make_dirs(dirname_of(dir + "/" + f)).ok());
    testing::write_text(dir + "/" + f, "weights of " + f);
  }
  PruneReport report;
  Status s = receive_finish_dir(dir, "hash", &files, &report);
  EXPECT_TRUE(s.ok()) << s.message();
  return report;
}

TEST(CopiedFilesTest, AFolderCopyRemovesOnlyWhatAnEarlierCopyWrote) {
  testing::TempDir tmp;
  std::string dir = tmp.file("models");
  ASSERT_TRUE(make_dirs(dir + "/.ferry/jobs/x").ok());
  ASSERT_TRUE(make_dirs(dir + "/runs/old").ok());
  testing::write_text(dir + "/notes.txt", "mine");
  testing::write_text(dir + "/.ferry/jobs/x/spec.json", "{}");
  testing::write_text(dir + "/runs/old/config.yaml", "mine too");

  // The first copy brings a single-file checkpoint: nothing of the user's goes.
  PruneReport first = copy_into(dir, {"model.safetensors", "config.json"});
  EXPECT_EQ(first.removed_count, 0);
  EXPECT_EQ(first.left_count, 2) << "notes.txt and runs/old/config.yaml are named as left";
  EXPECT_TRUE(has(first.left, "notes.txt"));
  EXPECT_TRUE(has(first.left, "runs/old/config.yaml"));

  // The second brings shards: the old single file is ferry's and stale, so it goes.
  PruneReport second = copy_into(dir, {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                       "model.safetensors.index.json", "config.json"});
  EXPECT_EQ(second.removed, std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(second.removed_count, 1);
  EXPECT_FALSE(path_exists(dir + "/model.safetensors"));
  EXPECT_EQ(testing::read_text(dir + "/notes.txt"), "mine");
  EXPECT_EQ(testing::read_text(dir + "/.ferry/jobs/x/spec.json"), "{}");
  EXPECT_EQ(testing::read_text(dir + "/runs/old/config.yaml"), "mine too");
  EXPECT_TRUE(has(second.left, "notes.txt"));
  EXPECT_FALSE(has(second.left, ".ferry/jobs/x/spec.json")) << ".ferry is never walked";
}

TEST(CopiedFilesTest, AFolderWithNoRecordIsNeverPruned) {
  testing::TempDir tmp;
  std::string dir = tmp.file("ckpt");
  ASSERT_TRUE(make_dirs(dir).ok());
  testing::write_text(dir + "/model.safetensors", "a user's own weights");
  std::vector<std::string> keep = {"model.safetensors.index.json"};
  testing::write_text(dir + "/model.safetensors.index.json", "{}");
  PruneReport r;
  ASSERT_TRUE(receive_finish_dir(dir, "hash", &keep, &r).ok());
  EXPECT_EQ(r.removed_count, 0);
  EXPECT_TRUE(path_exists(dir + "/model.safetensors"));
  EXPECT_EQ(r.left, std::vector<std::string>{"model.safetensors"});
  EXPECT_NE(r.not_pruned.find("no earlier ferry copy"), std::string::npos) << r.not_pruned;
}

TEST(CopiedFilesTest, AFileARecordNamesIsNotRemovedThroughASymlink) {
  testing::TempDir tmp;
  std::string dir = tmp.file("dest"), outside = tmp.file("team");
  ASSERT_TRUE(make_dirs(outside).ok());
  testing::write_text(outside + "/shard.bin", "the team's");
  copy_into(dir, {"sub/shard.bin", "config.json"});
  // The folder the record names becomes a link to a folder outside the copy.
  ASSERT_EQ(testing::run_process({"rm", "-r", dir + "/sub"}).exit_code, 0);
  ASSERT_EQ(::symlink(outside.c_str(), (dir + "/sub").c_str()), 0);
  PruneReport r = copy_into(dir, {"config.json"});
  EXPECT_EQ(r.removed_count, 0);
  EXPECT_EQ(testing::read_text(outside + "/shard.bin"), "the team's");
  EXPECT_TRUE(has(r.left, "sub")) << "the link itself is named as left";
}

TEST(CopiedFilesTest, ADestinationThatIsASymlinkIsNotPruned) {
  testing::TempDir tmp;
  std::string real = tmp.file("shared-models"), link = tmp.file("models");
  copy_into(real, {"old.bin"});
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  PruneReport r = copy_into(link, {"new.bin"});
  EXPECT_EQ(r.removed_count, 0);
  EXPECT_TRUE(path_exists(real + "/old.bin"));
  EXPECT_NE(r.not_pruned.find("symlink"), std::string::npos) << r.not_pruned;
}

TEST(CopiedFilesTest, ARecordEntryOutsideTheCopyOrInFerrysFolderIsIgnored) {
  testing::TempDir tmp;
  std::string dir = tmp.file("dest");
  ASSERT_TRUE(make_dirs(dir).ok());
  testing::write_text(tmp.file("victim.txt"), "outside");
  ASSERT_TRUE(make_dirs(dir + "/.ferry").ok());
  testing::write_text(dir + "/.ferry/agent", "the agent");
  // A record as a hostile or corrupt writer might leave it.
  std::string body = "ferry-files 1\n";
  for (const char* e : {"../victim.txt", "/etc/passwd", ".ferry/agent", "a/../../victim.txt"}) {
    append_keep_entry(&body, e);
  }
  ASSERT_TRUE(write_file_atomic(dir + "/" + kCopiedFilesName, body).ok());
  PruneReport r = copy_into(dir, {"x.bin"});
  EXPECT_EQ(r.removed_count, 0);
  EXPECT_EQ(testing::read_text(tmp.file("victim.txt")), "outside");
  EXPECT_EQ(testing::read_text(dir + "/.ferry/agent"), "the agent");
}

TEST(CopiedFilesTest, ACopyCutShortStillKnowsWhatItWrote) {
  testing::TempDir tmp;
  std::string dir = tmp.file("dest");
  std::vector<std::string> first = {"a.bin", "b.bin"};
  ASSERT_TRUE(receive_prepare_dir(dir, &first).ok());
  testing::write_text(dir + "/a.bin", "a");  // then the copy is cut; the source changes
  PruneReport r = copy_into(dir, {"c.bin"});
  EXPECT_EQ(r.removed, std::vector<std::string>{"a.bin"});
  EXPECT_EQ(r.left_count, 0);
}

TEST(CopiedFilesTest, FolderRootsThatAreNotAFolderOfTheirOwnAreRefused) {
  const char* home = std::getenv("HOME");
  ASSERT_NE(home, nullptr);
  EXPECT_FALSE(check_folder_copy_root("/").ok());
  EXPECT_FALSE(check_folder_copy_root("//.").ok());
  EXPECT_FALSE(check_folder_copy_root(std::string(home) + "/").ok());
  EXPECT_FALSE(check_folder_copy_root("/work/dir/.", "/work/dir").ok());
  EXPECT_FALSE(check_folder_copy_root("/data/../etc/models").ok());
  EXPECT_FALSE(check_folder_copy_root("out/..").ok());
  EXPECT_TRUE(check_folder_copy_root("/work/dir/models", "/work/dir").ok());
  EXPECT_TRUE(check_folder_copy_root("/data/..models").ok());
}

TEST(CopiedFilesTest, AReplyOfTheWrongTypesReadsAsNothing) {
  PruneReport r = prune_report_from_json(
      nlohmann::json{{"removed", "x"}, {"removed_count", "9"}, {"left", {1, "ok"}}, {"left_count", -5}});
  EXPECT_EQ(r.removed_count, 0);
  EXPECT_EQ(r.left, std::vector<std::string>{"ok"});
  EXPECT_EQ(r.left_count, 1);
  EXPECT_EQ(prune_report_from_json(nlohmann::json::array()).removed_count, 0);
}

}  // namespace
}  // namespace ferry
