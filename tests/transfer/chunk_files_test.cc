// The receiver's commit, on real files: it renames a verified part into place, and
// a commit sent again (its first reply lost with a cut link) finds its work done
// rather than failing on the part file it already renamed.
#include "transfer/chunk_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file_hash.h"
#include "base/file_util.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

constexpr int64_t kChunk = 4;

std::string chunk_hash(const std::string& bytes) { return xxh128_hex(bytes.data(), bytes.size()); }

// Receives `data` into `dest` in kChunk pieces, up to (not including) the commit.
std::vector<std::string> receive_all(const std::string& dest, const std::string& data) {
  std::vector<std::string> hashes;
  for (size_t off = 0; off < data.size(); off += kChunk) hashes.push_back(chunk_hash(data.substr(off, kChunk)));
  auto begin = receive_begin(dest, static_cast<int64_t>(data.size()), kChunk, 0644, "");
  EXPECT_TRUE(begin.ok()) << begin.status().message();
  for (size_t i = 0; i < hashes.size(); ++i) {
    Status w = receive_write(dest, static_cast<int64_t>(i), kChunk, hashes[i], data.substr(i * kChunk, kChunk));
    EXPECT_TRUE(w.ok()) << w.message();
  }
  return hashes;
}

// Review F22: only ferry's own suffixes are skipped; a user's file whose name
// merely contains one travels.
TEST(ListSourceTest, OnlyFerrysOwnFilesAreLeftOut) {
  testing::TempDir dir;
  for (const char* name : {"weights.ferry-partial.bin", "notes.ferry-spec.txt", "model.safetensors",
                           "model.safetensors.ferry-part", "model.safetensors.ferry-journal", ".ferry-complete"}) {
    testing::write_text(dir.file(name), "x");
  }
  auto listing = list_source(dir.path());
  ASSERT_TRUE(listing.ok()) << listing.status().message();
  std::vector<std::string> names;
  for (const auto& f : listing->files) names.push_back(f.path);
  EXPECT_EQ(names,
            (std::vector<std::string>{"model.safetensors", "notes.ferry-spec.txt", "weights.ferry-partial.bin"}));
}

// A file received and committed once; each test commits it again.
class SecondCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    hashes_ = receive_all(dest_, "0123456789abcdef-tail");
    ASSERT_TRUE(receive_commit(dest_, kChunk, hashes_, &bad_).ok());
    ASSERT_EQ(testing::read_text(dest_), "0123456789abcdef-tail");
  }

  testing::TempDir dir_;
  const std::string dest_ = dir_.file("weights.bin");
  std::vector<std::string> hashes_;
  std::vector<int64_t> bad_;
};

TEST_F(SecondCommitTest, OfTheSameBytesSucceeds) {
  EXPECT_TRUE(receive_commit(dest_, kChunk, hashes_, &bad_).ok()) << "the repeated commit must find its work done";
  EXPECT_TRUE(bad_.empty());
}

TEST_F(SecondCommitTest, WithNoPartFailsWhenTheDestinationHoldsOtherBytes) {
  ASSERT_TRUE(write_file_atomic(dest_, "0123456789abcdef-TAIL").ok());
  Status again = receive_commit(dest_, kChunk, hashes_, &bad_);
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find(".ferry-part"), std::string::npos) << again.message();
}

// Review N7: an identical destination is reused without a copy, and the eval
// worker is then run from it; a symlink there (to bytes another user can change)
// or a file others can write is received afresh instead.
TEST(ReceiveBeginTest, AnIdenticalDestinationIsReusedOnlyIfItIsAPlainFileOfOurs) {
  testing::TempDir dir;
  const std::string data = "0123456789abcdef-tail";
  std::vector<std::string> hashes;
  for (size_t off = 0; off < data.size(); off += kChunk) hashes.push_back(chunk_hash(data.substr(off, kChunk)));
  std::string file_hash;
  for (const auto& h : hashes) file_hash += h;
  file_hash = xxh128_hex(file_hash.data(), file_hash.size());
  const int64_t size = static_cast<int64_t>(data.size());
  auto holding_data = [&](const std::string& name) {
    const std::string path = dir.file(name);
    testing::write_text(path, data);
    return path;
  };
  // Whether receiving `path` begins complete: its bytes reused, none to send.
  auto reused = [&](const std::string& path) {
    auto begun = receive_begin(path, size, kChunk, 0755, file_hash);
    EXPECT_TRUE(begun.ok()) << begun.status().message();
    return begun.ok() && begun->complete;
  };

  const std::string plain = holding_data("plain.bin");
  ASSERT_EQ(::chmod(plain.c_str(), 0755), 0);
  EXPECT_TRUE(reused(plain)) << "a plain file of ours with the same bytes is reused";

  const std::string target = holding_data("elsewhere.bin");
  ASSERT_EQ(::symlink(target.c_str(), dir.file("linked.bin").c_str()), 0);
  EXPECT_FALSE(reused(dir.file("linked.bin"))) << "a symlink is never reused";

  const std::string open = holding_data("open.bin");
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  EXPECT_FALSE(reused(open)) << "a file others can write is never reused";

  const std::string foreign = holding_data("foreign.bin");
  ASSERT_EQ(::chown(foreign.c_str(), 65534, 65534), 0) << "the test runs as root";
  EXPECT_FALSE(reused(foreign)) << "another user's file is never reused";
}

TEST(ReceiveCommitTest, ACommitWithNothingReceivedFails) {
  testing::TempDir dir;
  std::vector<int64_t> bad;
  EXPECT_FALSE(receive_commit(dir.file("never.bin"), kChunk, {chunk_hash("abcd")}, &bad).ok());
}

// Found by the fuzz tests (review F21): a sender's index, length or chunk size never
// overflows an offset, grows the part file or divides by zero; each is an error.
TEST(ReceiveWriteTest, ChunksOutsideTheBegunFileAreRefused) {
  testing::TempDir dir;
  const std::string dest = dir.file("w.bin");
  ASSERT_TRUE(receive_begin(dest, 10, kChunk, 0644, "").ok());
  const int64_t huge = int64_t{1} << 62;
  EXPECT_FALSE(receive_write(dest, huge, kChunk, chunk_hash("abcd"), "abcd").ok());
  EXPECT_FALSE(receive_write(dest, 3, kChunk, chunk_hash("ab"), "ab").ok()) << "10 bytes are chunks 0..2";
  EXPECT_FALSE(receive_write(dest, 0, kChunk, chunk_hash("abcdefgh"), "abcdefgh").ok()) << "longer than a chunk";
  EXPECT_FALSE(receive_write(dest, 2, kChunk, chunk_hash("abcd"), "abcd").ok()) << "the last chunk is 2 bytes";
  EXPECT_FALSE(receive_write(dest, 0, 8, chunk_hash("abcdefgh"), "abcdefgh").ok()) << "another chunk size";
  EXPECT_TRUE(receive_write(dest, 2, kChunk, chunk_hash("ij"), "ij").ok());
  EXPECT_FALSE(receive_write(dir.file("never.bin"), 0, kChunk, chunk_hash("abcd"), "abcd").ok());
  struct stat st;
  ASSERT_EQ(::stat((dest + ".ferry-part").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 10);
  std::vector<int64_t> bad;
  EXPECT_FALSE(receive_commit(dest, 0, {chunk_hash("abcd")}, &bad).ok());
  auto hashed = hash_chunks(dest + ".ferry-part", kChunk, {huge});
  EXPECT_FALSE(hashed.ok());
}

// A chunk of zeros lands as a hole: a sparse source (a 16 GiB file of holes) stays
// sparse at the destination, and a zero chunk written over older bytes of an
// earlier attempt still reads back as zeros.
TEST(ReceiveWriteTest, AChunkOfZerosBecomesAHoleAndReadsBackAsZeros) {
  testing::TempDir dir;
  const std::string dest = dir.file("sparse.bin");
  constexpr int64_t kBig = 1 << 20;
  const std::string ones(kBig, '\1'), zeros(kBig, '\0');
  ASSERT_TRUE(receive_begin(dest, 3 * kBig, kBig, 0644, "").ok());
  ASSERT_TRUE(receive_write(dest, 0, kBig, chunk_hash(ones), ones).ok());
  ASSERT_TRUE(receive_write(dest, 1, kBig, chunk_hash(ones), ones).ok()) << "an earlier attempt's bytes";
  ASSERT_TRUE(receive_write(dest, 1, kBig, chunk_hash(zeros), zeros).ok());
  ASSERT_TRUE(receive_write(dest, 2, kBig, chunk_hash(zeros), zeros).ok());
  std::vector<int64_t> bad;
  Status c = receive_commit(dest, kBig, {chunk_hash(ones), chunk_hash(zeros), chunk_hash(zeros)}, &bad);
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_EQ(testing::read_text(dest), ones + zeros + zeros);
  // Where the file system punches no holes, the zeros were written.
  if (!testing::punches_holes(dir.path()))
    GTEST_SKIP() << "the file system under " << dir.path() << " cannot punch holes";
  struct stat st;
  ASSERT_EQ(::stat(dest.c_str(), &st), 0);
  EXPECT_LT(st.st_blocks * 512, 2 * kBig) << "the two chunks of zeros take disk space";
}

// A name JSON cannot carry (not UTF-8) fails the listing and names the file, instead of
// travelling as U+FFFD and failing later as "no such file" (review F20.7).
TEST(ListSourceTest, ANameThatIsNotUtf8FailsTheListingAndIsNamed) {
  testing::TempDir dir;
  ASSERT_TRUE(make_dirs(dir.file("src/ok")).ok());
  testing::write_text(dir.file("src/ok/caf\xc3\xa9"), "fine");  // UTF-8 passes
  auto fine = list_source(dir.file("src"));
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  ASSERT_EQ(fine->files.size(), 1u);
  EXPECT_EQ(fine->files[0].path, "ok/caf\xc3\xa9");
  testing::write_text(dir.file("src/w\xff.bin"), "latin-1 name");
  auto listed = list_source(dir.file("src"));
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.status().message().find("w\\xff.bin"), std::string::npos) << listed.status().message();
  EXPECT_NE(listed.status().message().find("not UTF-8"), std::string::npos) << listed.status().message();
}

}  // namespace
}  // namespace ferry
