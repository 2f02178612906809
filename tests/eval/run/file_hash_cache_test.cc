// The baseline store's file hash cache (jobs/eval/run/file_hash_cache.h): a file is
// hashed once while it stays the same, and again as soon as it is rewritten, even
// to the same size with its modification time put back.
#include "jobs/eval/run/file_hash_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>

#include <string>

#include "base/file_hash.h"
#include "tests/support/process.h"

namespace ferry::eval {
namespace {

using ferry::testing::TempDir;
using ferry::testing::write_text;

int64_t ctime_ns(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
}

// The kernel stamps file times from the coarse real-time clock: once it has moved past
// `ns`, a write gets a later ctime. (An event, not a sleep: one clock tick, a few ms.)
void wait_for_coarse_clock_past(int64_t ns) {
  for (int i = 0; i < 10000000; ++i) {
    timespec t{};
    clock_gettime(CLOCK_REALTIME_COARSE, &t);
    if (int64_t{t.tv_sec} * 1000000000 + t.tv_nsec > ns) return;
  }
  FAIL() << "the coarse clock did not move";
}

TEST(FileHashCacheTest, AnUnchangedFileIsHashedOnceAcrossCaches) {
  TempDir dir;
  write_text(dir.file("weights"), std::string(3 << 20, 'w'));
  const std::string cache_file = dir.file("file-hashes.json");
  const auto expected = xxh128_file_hex(dir.file("weights"));
  ASSERT_TRUE(expected.ok());
  {
    FileHashCache cache(cache_file, /*racy_seconds=*/0);
    auto h = cache.xxh128(dir.file("weights"));
    ASSERT_TRUE(h.ok()) << h.status().message();
    EXPECT_EQ(*h, *expected);
    EXPECT_EQ(cache.files_hashed(), 1);
    ASSERT_TRUE(cache.save().ok());
  }
  FileHashCache again(cache_file, 0);  // the next checkpoint's eval
  auto h = again.xxh128(dir.file("weights"));
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, *expected);
  EXPECT_EQ(again.files_reused(), 1);
  EXPECT_EQ(again.files_hashed(), 0);
}

TEST(FileHashCacheTest, AFileRewrittenToTheSameSizeAndMtimeIsHashedAgain) {
  TempDir dir;
  const std::string weights = dir.file("weights");
  write_text(weights, std::string(1 << 20, 'a'));
  struct stat before {};
  ASSERT_EQ(::stat(weights.c_str(), &before), 0);
  const std::string cache_file = dir.file("file-hashes.json");
  {
    FileHashCache cache(cache_file, 0);
    ASSERT_TRUE(cache.xxh128(weights).ok());
    ASSERT_TRUE(cache.save().ok());
  }
  wait_for_coarse_clock_past(ctime_ns(weights));
  write_text(weights, std::string(1 << 20, 'b'));  // same size, other bytes
  const timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, weights.c_str(), times, 0), 0);  // the old mtime put back
  FileHashCache again(cache_file, 0);
  auto h = again.xxh128(weights);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, *xxh128_file_hex(weights));
  EXPECT_EQ(again.files_hashed(), 1);
  EXPECT_EQ(again.files_reused(), 0);
}

TEST(FileHashCacheTest, AFileChangedJustBeforeItWasHashedIsNotRemembered) {
  TempDir dir;
  write_text(dir.file("weights"), "just written");
  const std::string cache_file = dir.file("file-hashes.json");
  {
    FileHashCache cache(cache_file);  // kRacySeconds: the file is seconds old at most
    ASSERT_TRUE(cache.xxh128(dir.file("weights")).ok());
    ASSERT_TRUE(cache.save().ok());
  }
  FileHashCache again(cache_file);
  ASSERT_TRUE(again.xxh128(dir.file("weights")).ok());
  EXPECT_EQ(again.files_reused(), 0);
}

TEST(FileHashCacheTest, ACorruptCacheFileIsAnEmptyCache) {
  TempDir dir;
  write_text(dir.file("weights"), "w");
  for (const char* text :
       {"not json", "[]", R"({"files": {"x": 1}})", R"({"files": {"W": {"size": "big", "xxh128": 7}}})"}) {
    std::string bad = text;
    if (bad.find("\"W\"") != std::string::npos) bad.replace(bad.find("\"W\""), 3, "\"" + dir.file("weights") + "\"");
    write_text(dir.file("file-hashes.json"), bad);
    FileHashCache cache(dir.file("file-hashes.json"), 0);
    auto h = cache.xxh128(dir.file("weights"));
    ASSERT_TRUE(h.ok()) << text;
    EXPECT_EQ(*h, *xxh128_file_hex(dir.file("weights"))) << text;
    EXPECT_EQ(cache.files_hashed(), 1) << text;
  }
}

}  // namespace
}  // namespace ferry::eval
