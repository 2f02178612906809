// SafetensorsCheckpoint: round trips through the writer, sharded folders, and refusal of
// truncated or inconsistent files with the file and tensor named. Test files are
// written here by safetensors_writer or by hand (raw header bytes).
#include "jobs/eval/io/safetensors_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "jobs/eval/io/safetensors_writer.h"
#include "tests/eval/eval_test_util.h"

namespace ferry::eval {
namespace {

using testing::read_text;
using testing::ScratchDir;
using testing::write_text;

std::vector<WriteTensor> sample_tensors() {
  // Values chosen to be exact in BF16 and F16.
  return {
      {"a.weight", {2, 3}, {1.0f, -2.0f, 0.5f, 0.25f, 3.0f, -0.125f}, "", {}},
      {"b.weight", {4}, {1.5f, 2.5f, -4.0f, 8.0f}, "", {}},
      {"c.weight", {1, 2, 2}, {0.0f, 1.0f, -1.0f, 0.75f}, "", {}},
  };
}

std::vector<float> values(const TensorRecord& r) {
  std::vector<float> out;
  for (int64_t i = 0; i < r.info.numel(); ++i) {
    if (r.info.dtype == StDtype::kF32) {
      float f;
      std::memcpy(&f, r.data + 4 * i, 4);
      out.push_back(f);
    } else {
      uint16_t b;
      std::memcpy(&b, r.data + 2 * i, 2);
      out.push_back(r.info.dtype == StDtype::kBF16 ? bf16_to_float(b) : f16_to_float(b));
    }
  }
  return out;
}

class SafetensorsReaderTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SafetensorsReaderTest, RoundTripsEveryDtype) {
  ScratchDir dir("st");
  WriteOptions options;
  options.dtype = GetParam();
  ASSERT_TRUE(write_safetensors_checkpoint(dir.path(), sample_tensors(), options).ok());
  auto ckpt = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  EXPECT_EQ((*ckpt)->names().size(), 3u);
  for (const WriteTensor& t : sample_tensors()) {
    auto r = (*ckpt)->read(t.name);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->info.dtype_name, GetParam());
    EXPECT_EQ(r->info.shape, t.shape);
    EXPECT_EQ(values(*r), t.values) << t.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, SafetensorsReaderTest, ::testing::Values("F32", "BF16", "F16"));

TEST(SafetensorsCheckpointTest, ShardedFolderFindsEveryTensorAndOpensShardsLazily) {
  ScratchDir dir("shard");
  WriteOptions options;
  options.shards = 3;
  ASSERT_TRUE(write_safetensors_checkpoint(dir.path(), sample_tensors(), options).ok());
  EXPECT_TRUE(std::filesystem::exists(dir / "model-00003-of-00003.safetensors"));
  auto ckpt = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().message();
  EXPECT_TRUE((*ckpt)->sharded());
  EXPECT_TRUE((*ckpt)->opened_files().empty());
  auto r = (*ckpt)->read("b.weight");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(values(*r), sample_tensors()[1].values);
  EXPECT_EQ((*ckpt)->opened_files().size(), 1u);
  EXPECT_EQ((*ckpt)->read_names(), std::set<std::string>{"b.weight"});
}

TEST(SafetensorsCheckpointTest, TruncatedFileIsRefusedNamingFileAndTensor) {
  ScratchDir dir("trunc");
  ASSERT_TRUE(write_safetensors_checkpoint(dir.path(), sample_tensors(), {}).ok());
  const std::string file = dir / "model.safetensors";
  std::string bytes = read_text(file);
  write_text(file, bytes.substr(0, bytes.size() - 6));
  auto ckpt = SafetensorsCheckpoint::open(dir.path());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_EQ(ckpt.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(ckpt.status().message().find(file), std::string::npos) << ckpt.status().message();
  EXPECT_NE(ckpt.status().message().find("c.weight"), std::string::npos) << ckpt.status().message();
  EXPECT_NE(ckpt.status().message().find("truncated"), std::string::npos);

  write_text(file, bytes.substr(0, 5));  // not even the header length
  ckpt = SafetensorsCheckpoint::open(dir.path());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.status().message().find("truncated"), std::string::npos);

  write_text(file, bytes.substr(0, 40));  // header cut
  ckpt = SafetensorsCheckpoint::open(dir.path());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.status().message().find(file), std::string::npos);
}

std::string raw_file(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + std::string(data_bytes, '\0');
}

TEST(SafetensorsCheckpointTest, InconsistentHeadersAreRefused) {
  ScratchDir dir("bad");
  const std::string file = dir / "model.safetensors";
  struct Case {
    std::string header;
    size_t data;
    std::string expect;
  };
  std::vector<Case> cases = {
      {"{not json", 0, "not a JSON object"},
      {R"({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 12]}})", 16, "'w'"},
      {R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [4, 0]}})", 16, "'w'"},
      {R"({"w": {"dtype": "F32", "shape": [2]}})", 16, "'w'"},
      {R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 16, "'w'"},
      {R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
           "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", 16, "overlap"},
  };
  for (const Case& c : cases) {
    write_text(file, raw_file(c.header, c.data));
    auto ckpt = SafetensorsCheckpoint::open(dir.path());
    ASSERT_FALSE(ckpt.ok()) << c.header;
    EXPECT_NE(ckpt.status().message().find(file), std::string::npos) << ckpt.status().message();
    EXPECT_NE(ckpt.status().message().find(c.expect), std::string::npos) << ckpt.status().message();
  }
  // Absurd header length.
  std::string bytes(16, '\xff');
  write_text(file, bytes);
  auto ckpt = SafetensorsCheckpoint::open(dir.path());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.status().message().find("header length"), std::string::npos);
}

TEST(SafetensorsCheckpointTest, BrokenIndexIsRefused) {
  ScratchDir dir("index");
  WriteOptions options;
  options.shards = 2;
  ASSERT_TRUE(write_safetensors_checkpoint(dir.path(), sample_tensors(), options).ok());
  const std::string index = dir / "model.safetensors.index.json";
  const std::string good = read_text(index);

  write_text(index, "{\"weight_map\": ");
  auto ckpt = SafetensorsCheckpoint::open(dir.path());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.status().message().find(index), std::string::npos);

  write_text(index, R"({"weight_map": {"a.weight": "../escape.safetensors"}})");
  ckpt = SafetensorsCheckpoint::open(dir.path());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_NE(ckpt.status().message().find("outside"), std::string::npos);

  // A shard that is missing, and a tensor the index lists but the shard lacks.
  write_text(index, R"({"weight_map": {"a.weight": "model-00009-of-00009.safetensors",
                                      "zz.weight": "model-00001-of-00002.safetensors"}})");
  ckpt = SafetensorsCheckpoint::open(dir.path());
  ASSERT_TRUE(ckpt.ok());
  auto r = (*ckpt)->read("a.weight");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("model-00009-of-00009.safetensors"), std::string::npos);
  r = (*ckpt)->read("zz.weight");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'zz.weight'"), std::string::npos);
  EXPECT_NE(r.status().message().find("absent"), std::string::npos);
}

TEST(SafetensorsCheckpointTest, MissingCheckpointIsNotFound) {
  ScratchDir dir("empty");
  auto ckpt = SafetensorsCheckpoint::open(dir.path());
  ASSERT_FALSE(ckpt.ok());
  EXPECT_EQ(ckpt.status().code(), StatusCode::kNotFound);
  EXPECT_NE(ckpt.status().message().find(dir.path()), std::string::npos);
}

TEST(Bf16Test, ConversionsAreExactWhereRepresentable) {
  for (float v : {0.0f, 1.0f, -2.5f, 0.0078125f, 65536.0f, -3.140625f}) {
    EXPECT_EQ(bf16_to_float(float_to_bf16(v)), v);
  }
  EXPECT_EQ(f16_to_float(float_to_f16(0.333251953125f)), 0.333251953125f);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);  // bit patterns from the bfloat16 definition
  EXPECT_EQ(f16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_float(0xc000), -2.0f);
  EXPECT_EQ(f16_to_float(0x0001), 5.960464477539063e-08f);  // smallest subnormal
}

}  // namespace
}  // namespace ferry::eval
