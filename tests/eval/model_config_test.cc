// config.json parsing for Qwen3 targets and DFlash drafters. Expected layer ids come
// from the DFlash reference (36-layer Qwen3-8B -> [1, 9, 17, 25, 33]; SpecForge configs
// for 32- and 64-layer targets), not from the code under test.
#include "jobs/eval/model_config.h"

#include <gtest/gtest.h>

#include "tests/eval/eval_test_util.h"

namespace ferry::eval {
namespace {

using testing::ScratchDir;
using testing::write_file;

TEST(ModelConfigTest, BuildTargetLayerIdsMatchesPublishedDrafters) {
  EXPECT_EQ(build_target_layer_ids(36, 5), (std::vector<int64_t>{1, 9, 17, 25, 33}));
  EXPECT_EQ(build_target_layer_ids(32, 5), (std::vector<int64_t>{1, 8, 15, 22, 29}));
  EXPECT_EQ(build_target_layer_ids(64, 5), (std::vector<int64_t>{1, 16, 31, 46, 61}));
  EXPECT_EQ(build_target_layer_ids(36, 1), (std::vector<int64_t>{18}));
}

TEST(ModelConfigTest, ReadsDFlashConfig) {
  ScratchDir dir("cfg");
  write_file(dir / "config.json", R"({
    "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "block_size": 16,
    "num_target_layers": 36, "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]},
    "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 5, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "rms_norm_eps": 1e-6, "rope_theta": 1000000,
    "vocab_size": 151936, "attention_bias": false, "tie_word_embeddings": false,
    "layer_types": ["full_attention", "full_attention", "full_attention", "full_attention", "full_attention"]})");
  auto c = load_dflash_config(dir.path());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->block_size, 16);
  EXPECT_EQ(c->mask_token_id, 151669);
  EXPECT_EQ(c->target_layer_ids, (std::vector<int64_t>{1, 9, 17, 25, 33}));
  EXPECT_FALSE(c->target_layer_ids_derived);
  EXPECT_EQ(c->model.head_dim, 128);
  EXPECT_EQ(c->model.num_key_value_heads, 8);
  EXPECT_DOUBLE_EQ(c->model.rope_theta, 1e6);
}

TEST(ModelConfigTest, DerivesTargetLayerIdsWhenAbsent) {
  ScratchDir dir("cfg");
  write_file(dir / "config.json", R"({"block_size": 8, "num_target_layers": 36,
    "dflash_config": {"mask_token_id": 5}, "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 5, "num_attention_heads": 4})");
  auto c = load_dflash_config(dir.path());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->target_layer_ids, (std::vector<int64_t>{1, 9, 17, 25, 33}));
  EXPECT_TRUE(c->target_layer_ids_derived);
  EXPECT_EQ(c->model.head_dim, 16);  // hidden / heads
}

TEST(ModelConfigTest, VlmWrapperYieldsTextConfig) {
  ScratchDir dir("cfg");
  write_file(dir / "config.json", R"({"model_type": "qwen3_vl", "tie_word_embeddings": true,
    "text_config": {"vocab_size": 100, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                    "num_attention_heads": 4, "num_key_value_heads": 2, "eos_token_id": [3, 4]},
    "vision_config": {"depth": 2}})");
  auto c = load_qwen3_config(dir.path());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->vlm_wrapped);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->vocab_size, 100);
  EXPECT_EQ(c->eos_token_ids, (std::vector<int64_t>{3, 4}));
}

TEST(ModelConfigTest, BadConfigsNameFileAndField) {
  ScratchDir dir("cfg");
  const std::string path = dir / "config.json";
  struct Case {
    std::string text;
    std::string expect;
  };
  const std::string dims = R"("hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                              "num_attention_heads": 4, "vocab_size": 100)";
  std::vector<Case> cases = {
      {"{\"hidden_size\": ", "invalid JSON"},
      {"[1, 2]", "JSON object"},
      {R"({"intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 9})", "'hidden_size'"},
      {"{" + dims + R"(, "num_key_value_heads": 3})", "num_key_value_heads"},
      {"{" + dims + R"(, "layer_types": ["sliding_attention", "full_attention"]})", "layer_types[0]"},
      {"{" + dims + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4}})", "yarn"},
      {"{" + dims + R"(, "attention_bias": true})", "attention_bias"},
      {"{" + dims + R"(, "hidden_size": "64"})", "'hidden_size'"},
  };
  for (const Case& c : cases) {
    write_file(path, c.text);
    auto r = load_qwen3_config(dir.path());
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
  }
  write_file(path, "{" + dims + R"(, "block_size": 4, "num_target_layers": 4})");
  auto d = load_dflash_config(dir.path());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("mask_token_id"), std::string::npos);
  auto missing = load_qwen3_config(dir / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope/config.json"), std::string::npos);
}

}  // namespace
}  // namespace ferry::eval
