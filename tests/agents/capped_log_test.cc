// CappedLog: a job's log kept within log_max as its head and a rotating tail,
// read through offsets that count every byte (review F18).
#include "base/capped_log.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::TempDir;

// Bytes the files in `dir` take (a log's head and its tail chunks).
int64_t bytes_on_disk(const TempDir& dir) {
  int64_t total = 0;
  DIR* d = ::opendir(dir.path().c_str());
  while (dirent* e = ::readdir(d)) {
    struct stat st;
    if (e->d_name[0] != '.' && ::stat(dir.file(e->d_name).c_str(), &st) == 0) total += st.st_size;
  }
  ::closedir(d);
  return total;
}

// Numbered lines, so every byte's place in the stream is known.
std::string numbered_lines(int from, int to) {
  std::string s;
  for (int i = from; i < to; ++i) s += "line " + std::to_string(i) + "\n";
  return s;
}

// The whole stream as a follower reads it, a marker where bytes were dropped.
std::string read_all(const std::string& path, int64_t max_per_read) {
  std::string out;
  int64_t offset = 0;
  for (;;) {
    auto r = read_capped_log(path, offset, max_per_read);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return out;
    if (r->dropped > 0) out += dropped_marker(r->dropped);
    out += r->bytes;
    offset = r->offset + static_cast<int64_t>(r->bytes.size());
    if (r->bytes.empty()) return out;
  }
}

// Each test's log, alone in a fresh folder.
class CappedLogTest : public ::testing::Test {
 protected:
  TempDir dir_;
  const std::string path_ = dir_.file("log");
};

TEST_F(CappedLogTest, KeepsTheHeadAndTheTailWithinTheCapAndCountsWhatItDropped) {
  const int64_t cap = 4096;
  const std::string all = numbered_lines(0, 5000);
  auto w = CappedLogWriter::open(path_, cap);
  ASSERT_TRUE(w.ok());
  // Pieces of odd sizes, so rotation falls in the middle of a write.
  for (size_t at = 0; at < all.size(); at += 777) {
    ASSERT_TRUE(w->append(all.substr(at, 777)).ok());
    ASSERT_LE(bytes_on_disk(dir_), cap);
  }
  EXPECT_EQ(w->size(), static_cast<int64_t>(all.size()));
  EXPECT_EQ(capped_log_size(path_), static_cast<int64_t>(all.size()));

  std::string got = read_all(path_, 1000);
  EXPECT_EQ(got.substr(0, cap / 2), all.substr(0, cap / 2));
  size_t marker = got.find("bytes dropped here");
  ASSERT_NE(marker, std::string::npos);
  std::string tail = got.substr(got.find('\n', marker) + 1);
  ASSERT_GE(tail.size(), static_cast<size_t>(cap / 4));
  EXPECT_EQ(tail, all.substr(all.size() - tail.size()));
  // The marker says how many: head + dropped + tail = everything written.
  int64_t dropped = std::stoll(got.substr(got.rfind("[ferry: ", marker) + 8));
  EXPECT_EQ(cap / 2 + dropped + static_cast<int64_t>(tail.size()), static_cast<int64_t>(all.size()));
}

TEST_F(CappedLogTest, AReaderBehindTheRotationResumesAtTheOldestKeptByte) {
  auto w = CappedLogWriter::open(path_, 400);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->append(std::string(150, 'h')).ok());
  auto first = read_capped_log(path_, 0, 100);  // a follower reads a little, then falls behind
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->bytes, std::string(100, 'h'));
  ASSERT_TRUE(w->append(std::string(2000, 't')).ok());
  auto next = read_capped_log(path_, 100, 1000);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->offset, 100);
  EXPECT_EQ(next->bytes, std::string(50, 'h') + std::string(50, 't'));  // the rest of the 200-byte head
  auto past = read_capped_log(path_, 200, 1000);
  ASSERT_TRUE(past.ok());
  EXPECT_GT(past->dropped, 0);
  EXPECT_EQ(past->offset, 200 + past->dropped);
  EXPECT_EQ(past->bytes, std::string(past->bytes.size(), 't'));
  EXPECT_EQ(past->size, 2150);
}

TEST_F(CappedLogTest, AReopenedWriterContinuesAndASkipIsRememberedOnDisk) {
  {
    auto w = CappedLogWriter::open(path_, 400);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->append(std::string(300, 'a')).ok());
    ASSERT_TRUE(w->skip(1000).ok());  // the host's log dropped these
  }
  EXPECT_EQ(capped_log_size(path_), 1300);
  auto w = CappedLogWriter::open(path_, 400);  // a resumed coordinator
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->size(), 1300);
  ASSERT_TRUE(w->append("end\n").ok());
  std::string got = read_all(path_, 1 << 20);
  EXPECT_NE(got.find(std::string(300, 'a')), std::string::npos);
  EXPECT_NE(got.find(dropped_marker(1000)), std::string::npos);
  EXPECT_EQ(got.substr(got.size() - 4), "end\n");
}

TEST_F(CappedLogTest, TailGivesTheLastLinesAndWhereTheyEnd) {
  auto w = CappedLogWriter::open(path_, 1 << 16);
  ASSERT_TRUE(w.ok());
  const std::string all = numbered_lines(0, 100000);
  ASSERT_TRUE(w->append(all).ok());
  int64_t end = 0;
  auto last = capped_log_tail(path_, 3, &end);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, numbered_lines(99997, 100000));
  EXPECT_EQ(end, static_cast<int64_t>(all.size()));
  ASSERT_TRUE(w->append("no newline").ok());
  auto partial = capped_log_tail(path_, 2);
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(*partial, "line 99999\nno newline");
  auto none = capped_log_tail(dir_.file("missing"), 3);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
}

}  // namespace
}  // namespace ferry
