// A model folder's content fingerprint (jobs/eval/io/model_fingerprint.h), on a folder
// written here: a copy (with ferry's copy bookkeeping beside it) fingerprints as its
// source; another config, header, size, file or sampled block of tensor data does not;
// and a change between the sampled blocks is not seen, as the header says.
#include "jobs/eval/io/model_fingerprint.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/process.h"

namespace ferry::eval {
namespace {

namespace fs = std::filesystem;
using ferry::testing::TempDir;
using ferry::testing::write_text;

// Past kWholeFileBytes, so the file is sampled, not hashed whole.
constexpr int64_t kDataBytes = int64_t{20} << 20;

// A .safetensors file of one F32 tensor `name` over kDataBytes of a byte pattern;
// returns where its tensor data starts.
int64_t write_big_safetensors(const std::string& path, const std::string& name) {
  const std::string header =
      "{\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(kDataBytes / 4) +
      "],\"data_offsets\":[0," + std::to_string(kDataBytes) + "]}}";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << header;
  std::string data(static_cast<size_t>(kDataBytes), '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
  out << data;
  return 8 + static_cast<int64_t>(header.size());
}

// Flips the byte at `offset` of `path`.
void flip_byte(const std::string& path, int64_t offset) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(offset);
  char c = 0;
  f.get(c);
  f.seekp(offset);
  f.put(static_cast<char>(c ^ 0x5a));
}

std::string fingerprint(const std::string& path) {
  auto f = model_fingerprint(path);
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? *f : "";
}

class ModelFingerprintTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(src());
    write_text(src() + "/config.json", "{\"hidden_size\": 64}");
    write_text(src() + "/tokenizer.json", "{\"model\": {}}");
    data_start_ = write_big_safetensors(src() + "/model.safetensors", "w");
    source_ = fingerprint(src());
    ASSERT_EQ(source_.size(), 32u);
  }
  std::string src() const { return dir_.file("src"); }
  // A fresh copy of the source folder, as a copy stage would leave it (with its bookkeeping).
  std::string copy() {
    const std::string to = dir_.file("copy");
    fs::remove_all(to);
    fs::copy(src(), to);
    write_text(to + "/.ferry-complete", "00112233445566778899aabbccddeeff\n");
    write_text(to + "/.ferry-files", "config.json\n");
    write_text(to + "/model.safetensors.ferry-part", "left by a cut copy");
    return to;
  }

  TempDir dir_;
  int64_t data_start_ = 0;
  std::string source_;
};

TEST_F(ModelFingerprintTest, ACopyFingerprintsAsItsSource) {
  const std::string to = copy();
  EXPECT_EQ(fingerprint(to), source_);
  EXPECT_EQ(copy_manifest_hash(to), "00112233445566778899aabbccddeeff");
  EXPECT_EQ(copy_manifest_hash(src()), "");
  write_text(to + "/.ferry-complete", "not a hash\n");
  EXPECT_EQ(copy_manifest_hash(to), "");
}

TEST_F(ModelFingerprintTest, AnotherConfigHeaderSizeFileOrSampledBlockDiffers) {
  std::string to = copy();
  write_text(to + "/config.json", "{\"hidden_size\": 65}");  // a small file: every byte
  EXPECT_NE(fingerprint(to), source_) << "config";

  to = copy();
  write_big_safetensors(to + "/model.safetensors", "v");  // the same size, another tensor name
  EXPECT_NE(fingerprint(to), source_) << "header";

  to = copy();
  fs::resize_file(to + "/model.safetensors", fs::file_size(to + "/model.safetensors") + 1);
  EXPECT_NE(fingerprint(to), source_) << "size";

  to = copy();
  write_text(to + "/generation_config.json", "{}");
  EXPECT_NE(fingerprint(to), source_) << "another file";

  // Tensor data in the first and the last sampled block: training moves every weight.
  for (int64_t at : {data_start_ + 5, data_start_ + kDataBytes - 1}) {
    to = copy();
    flip_byte(to + "/model.safetensors", at);
    EXPECT_NE(fingerprint(to), source_) << "tensor data at " << at;
  }
}

// The limit the header states: a byte no sample reads is not seen.
TEST_F(ModelFingerprintTest, AByteBetweenTheSampledBlocksIsNotSeen) {
  const int64_t between = data_start_ + kSampleBytes + 1000;  // past block 0, before block 1
  ASSERT_LT(between, data_start_ + (kDataBytes - kSampleBytes) / (kSampleBlocks - 1));
  const std::string to = copy();
  flip_byte(to + "/model.safetensors", between);
  EXPECT_EQ(fingerprint(to), source_);
}

TEST_F(ModelFingerprintTest, OneFileAndAMissingPath) {
  const std::string one = fingerprint(src() + "/model.safetensors");
  EXPECT_EQ(one.size(), 32u);
  EXPECT_NE(one, source_);
  auto missing = model_fingerprint(dir_.file("nothing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(dir_.file("nothing")), std::string::npos) << missing.status().message();
}

}  // namespace
}  // namespace ferry::eval
