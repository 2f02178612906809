// The safetensors reader (jobs/eval, torch-free) on mutated checkpoint files and
// shard indexes: a file is refused with a message naming it, or every tensor it
// accepts lies inside the mapping with a size its dtype and shape agree on; never a
// crash, a read outside the file or an overflow.
#include <gtest/gtest.h>

#include <limits>

#include "base/file_util.h"
#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/io/safetensors_writer.h"
#include "tests/fuzz/fuzz_rounds.h"
#include "tests/fuzz/random_input.h"
#include "tests/support/process.h"

namespace ferry::fuzz {
namespace {

using eval::SafetensorsCheckpoint;
using eval::SafetensorsFile;

std::string read_all(const std::string& p) {
  auto text = read_file(p);
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? *text : std::string();
}

class SafetensorsFuzzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Seeds: files as the writer makes them (the format real checkpoints use).
    std::vector<eval::WriteTensor> tensors = {
        {"model.embed.weight", {4, 3}, std::vector<float>(12, 0.5f), "", {}},
        {"model.norm.weight", {3}, {1, 2, 3}, "F32", {}},
        {"lm_head.weight", {2, 3}, std::vector<float>(6, -1.f), "F16", {}},
        {"empty", {0, 5}, {}, "", {}},
    };
    for (const char* dtype : {"BF16", "F32"}) {
      std::vector<const eval::WriteTensor*> all;
      for (const auto& t : tensors) all.push_back(&t);
      std::string path = dir_.path() + "/seed_" + dtype + ".safetensors";
      ASSERT_TRUE(eval::write_safetensors_file(path, all, dtype, {{"format", "pt"}}).ok());
      seeds_.push_back(read_all(path));
    }
    eval::WriteOptions sharded;
    sharded.shards = 2;
    ASSERT_TRUE(eval::write_safetensors_checkpoint(dir_.path() + "/sharded", tensors, sharded).ok());
    index_ = nlohmann::json::parse(read_all(dir_.path() + "/sharded/model.safetensors.index.json"));
  }

  // Everything a caller may do with an opened file, checked against the mapping.
  static void use_all(const SafetensorsFile& file) {
    for (const auto& [name, info] : file.tensors()) {
      auto rec = file.record(name);
      ASSERT_TRUE(rec.ok());
      const uint8_t* lo = rec->owner->data();
      const uint8_t* hi = lo + rec->owner->size();
      ASSERT_GE(rec->data, lo);
      ASSERT_LE(rec->data + rec->nbytes, hi) << name;
      uint64_t sum = 0;
      if (rec->nbytes > 0) sum += rec->data[0] + rec->data[rec->nbytes - 1];
      (void)sum;
      int64_t numel = info.numel();
      size_t elem = eval::st_dtype_size(info.dtype);
      ASSERT_GE(numel, 0) << name;
      if (elem != 0) {
        EXPECT_EQ(static_cast<uint64_t>(numel) * elem, rec->nbytes) << name;
      }
    }
  }

  testing::TempDir dir_;
  std::vector<std::string> seeds_;
  nlohmann::json index_;
};

TEST_F(SafetensorsFuzzTest, MutatedFilesAreReadOrRefusedByName) {
  FuzzPlan plan = fuzz_plan(2000);
  const std::string path = dir_.path() + "/fuzz.safetensors";
  int opened = 0, refused = 0;
  for_each_round(plan, "SafetensorsFuzzTest.file", [&](Mutator& m, int) {
    const std::string& seed = seeds_[m.below(seeds_.size())];
    std::string bytes;
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(seed[i]);
    if (m.chance(60)) {
      // Mutate the header as JSON and write its length back (or a wrong one).
      nlohmann::json header = nlohmann::json::parse(seed.substr(8, header_len));
      std::string text = wire_text(m.mutate_json(header));
      uint64_t len = m.chance(85) ? text.size() : m.odd_word();
      bytes.assign(8, '\0');
      for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(len >> (8 * i));
      bytes += text + seed.substr(8 + header_len);
    } else {
      bytes = m.mutate_bytes(seed, seeds_);
    }
    testing::write_text(path, bytes);
    auto file = SafetensorsFile::open(path);
    if (file.ok()) {
      ++opened;
      use_all(**file);
    } else {
      ++refused;
      EXPECT_NE(file.status().message().find(path), std::string::npos) << file.status().message();
    }
  });
  expect_outcomes(plan, "files", {{"opened", opened, 100}, {"refused", refused, 100}});
}

TEST_F(SafetensorsFuzzTest, MutatedShardIndexesAreReadOrRefused) {
  FuzzPlan plan = fuzz_plan(1000);
  const std::string folder = dir_.path() + "/sharded";
  const std::string index_path = folder + "/model.safetensors.index.json";
  int opened = 0, refused = 0;
  for_each_round(plan, "SafetensorsFuzzTest.index", [&](Mutator& m, int) {
    std::string text = wire_text(m.mutate_json(index_));
    if (m.chance(30)) text = m.mutate_bytes(text, {});
    testing::write_text(index_path, text);
    auto ckpt = SafetensorsCheckpoint::open(folder);
    if (!ckpt.ok()) {
      ++refused;
      return;
    }
    ++opened;
    for (const std::string& name : (*ckpt)->names()) {
      auto info = (*ckpt)->info(name);
      auto rec = (*ckpt)->read(name);
      if (rec.ok()) {
        EXPECT_TRUE(info.ok());
        EXPECT_LE(rec->data + rec->nbytes, rec->owner->data() + rec->owner->size());
      }
    }
  });
  testing::write_text(index_path, index_.dump());
  expect_outcomes(plan, "indexes", {{"opened", opened, 100}, {"refused", refused, 100}});
}

// A tensor of an unknown dtype (no element size to check its bytes against) whose
// shape multiplies past int64 is refused: numel() would overflow.
TEST_F(SafetensorsFuzzTest, AShapeWhoseElementCountOverflowsIsRefused) {
  std::string header = R"({"t":{"dtype":"X9","shape":[4294967296,4294967296,4],"data_offsets":[0,0]}})";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(header.size() >> (8 * i));
  const std::string path = dir_.path() + "/overflow.safetensors";
  testing::write_text(path, bytes + header);
  auto file = SafetensorsFile::open(path);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.status().message().find("'t'"), std::string::npos) << file.status().message();
}

}  // namespace
}  // namespace ferry::fuzz
