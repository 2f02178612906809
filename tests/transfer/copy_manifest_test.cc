// The manifest hash is what completion markers written by earlier runs hold: a
// change of its text would make every finished copy look unfinished. Pinned here
// to the literal text of the format, hashed apart from the code under test.
#include "transfer/copy_manifest.h"

#include <gtest/gtest.h>

#include "base/file_hash.h"
#include "transfer/chunk_files.h"
#include "transfer/copy_plan.h"

namespace ferry {
namespace {

TEST(CopyManifestTest, HashesTheJsonTextOfEachFilesPathSizeAndHashInListingOrder) {
  const std::string h1(32, 'a'), h2(32, 'b');
  CopyManifest m;
  m.add("shards/model-00001.safetensors", 9, h1);
  m.add("config \"quoted\".json", 0, h2);
  const std::string text =
      "[[\"shards/model-00001.safetensors\",9,\"" + h1 + "\"],[\"config \\\"quoted\\\".json\",0,\"" + h2 + "\"]]";
  EXPECT_EQ(m.hash(), xxh128_hex(text.data(), text.size()));

  CopyManifest empty;
  EXPECT_EQ(empty.hash(), xxh128_hex("[]", 2));
}

TEST(CopyManifestTest, TheSendersManifestOfChunkHashesIsTheSameHash) {
  CopyFile a;
  a.rel = "a.bin";
  a.size = 5;
  a.hashes = {"00112233445566778899aabbccddeeff", "ffeeddccbbaa99887766554433221100"};
  CopyFile b;
  b.rel = "b.bin";
  b.size = 0;
  CopyManifest m;
  m.add(a.rel, a.size, file_hash_of(a.hashes));
  m.add(b.rel, b.size, file_hash_of(b.hashes));
  std::string expected = m.hash();
  EXPECT_EQ(copy_manifest_hash({a, b}), expected);
  std::string joined = a.hashes[0] + a.hashes[1];
  const std::string text = "[[\"a.bin\",5,\"" + xxh128_hex(joined.data(), joined.size()) + "\"],[\"b.bin\",0,\"" +
                           xxh128_hex("", 0) + "\"]]";
  EXPECT_EQ(expected, xxh128_hex(text.data(), text.size()));
}

}  // namespace
}  // namespace ferry
