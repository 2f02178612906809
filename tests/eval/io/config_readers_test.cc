// The families' config.json readers (io/qwen3_config, qwen35_config, dflash_config).
// Expected layer ids come from the DFlash reference (36-layer Qwen3-8B -> [1, 9, 17, 25,
// 33]; SpecForge configs for 32- and 64-layer targets), not from the code under test.
// Which family a config is: tests/eval/models/families_test.cc.
#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "jobs/eval/io/dflash_config.h"
#include "jobs/eval/io/qwen35_config.h"
#include "jobs/eval/io/qwen3_config.h"
#include "tests/eval/eval_test_util.h"

namespace ferry::eval {
namespace {

using testing::ScratchDir;
using testing::write_text;

TEST(ModelConfigTest, BuildTargetLayerIdsMatchesPublishedDrafters) {
  EXPECT_EQ(build_target_layer_ids(36, 5), (std::vector<int64_t>{1, 9, 17, 25, 33}));
  EXPECT_EQ(build_target_layer_ids(32, 5), (std::vector<int64_t>{1, 8, 15, 22, 29}));
  EXPECT_EQ(build_target_layer_ids(64, 5), (std::vector<int64_t>{1, 16, 31, 46, 61}));
  EXPECT_EQ(build_target_layer_ids(36, 1), (std::vector<int64_t>{18}));
}

TEST(ModelConfigTest, ReadsDFlashConfig) {
  ScratchDir dir("cfg");
  write_text(dir / "config.json", R"({
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
  write_text(dir / "config.json", R"({"block_size": 8, "num_target_layers": 36,
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
  write_text(dir / "config.json", R"({"model_type": "qwen3_vl", "tie_word_embeddings": true,
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
      {R"({"intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 9})",
       "'hidden_size'"},
      {"{" + dims + R"(, "num_key_value_heads": 3})", "num_key_value_heads"},
      {"{" + dims + R"(, "layer_types": ["sliding_attention", "full_attention"]})", "layer_types[0]"},
      {"{" + dims + R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4}})", "yarn"},
      {"{" + dims + R"(, "attention_bias": true})", "attention_bias"},
      {"{" + dims + R"(, "hidden_size": "64"})", "'hidden_size'"},
  };
  for (const Case& c : cases) {
    write_text(path, c.text);
    auto r = load_qwen3_config(dir.path());
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
  }
  write_text(path, "{" + dims + R"(, "block_size": 4, "num_target_layers": 4})");
  auto d = load_dflash_config(dir.path());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("mask_token_id"), std::string::npos);
  auto missing = load_qwen3_config(dir / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope/config.json"), std::string::npos);
}

// The Qwen3.6-27B config as published (values from ../shared/reference/qwen35.md §1),
// trimmed to what the text backbone reads; layer_types left out so the interval rule applies.
const char* kQwen36Config = R"({
  "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
  "image_token_id": 248056, "video_token_id": 248057, "vision_start_token_id": 248053,
  "eos_token_id": 248046, "tie_word_embeddings": false,
  "vision_config": {"depth": 27},
  "text_config": {"model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 5120,
    "intermediate_size": 17408, "num_hidden_layers": 64, "full_attention_interval": 4,
    "num_attention_heads": 24, "num_key_value_heads": 4, "head_dim": 256, "attn_output_gate": true,
    "attention_bias": false, "linear_num_key_heads": 16, "linear_num_value_heads": 48,
    "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4,
    "hidden_act": "silu", "rms_norm_eps": 1e-6, "mamba_ssm_dtype": "float32", "eos_token_id": 248044,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                        "mrope_section": [11, 11, 10], "mrope_interleaved": true}}})";

TEST(ModelConfigTest, ReadsQwen36HybridConfig) {
  ScratchDir dir("cfg35");
  write_text(dir / "config.json", kQwen36Config);
  auto c = load_qwen35_config(dir.path());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->num_linear_layers(), 48);
  EXPECT_FALSE(c->linear_layer[3]);
  EXPECT_FALSE(c->linear_layer[63]);
  EXPECT_TRUE(c->linear_layer[62]);
  EXPECT_EQ(c->describe(), "qwen3_5: 48 linear + 16 full attention");
  EXPECT_EQ(c->rotary_dim, 64);
  EXPECT_DOUBLE_EQ(c->text.rope_theta, 1e7);
  EXPECT_EQ(c->text.head_dim, 256);
  EXPECT_EQ(c->linear_num_value_heads, 48);
  EXPECT_EQ(c->text.eos_token_ids, (std::vector<int64_t>{248044}));
  EXPECT_EQ(c->vision_token_ids, (std::vector<int64_t>{248056, 248057, 248053}));
  EXPECT_TRUE(c->text.vlm_wrapped);
  // A Qwen3 loader refuses it by its layer kinds, never computes it as dense.
  write_text(dir / "config.json", R"({"model_type": "qwen3_5_text", "vocab_size": 10, "hidden_size": 8,
    "intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
    "layer_types": ["linear_attention", "full_attention"]})");
  auto dense = load_qwen3_config(dir.path());
  ASSERT_FALSE(dense.ok());
  EXPECT_NE(dense.status().message().find("layer_types[0]"), std::string::npos);
}

TEST(ModelConfigTest, RefusesRopeScalingAndBadHybridFieldsByName) {
  ScratchDir dir("cfg35");
  const std::string path = dir / "config.json";
  auto with = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json j = nlohmann::json::parse(kQwen36Config);
    change(j);
    write_text(path, j.dump());
  };
  struct Case {
    std::function<void(nlohmann::json&)> change;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {[](nlohmann::json& j) { j["text_config"]["rope_parameters"]["rope_type"] = "yarn"; }, "yarn"},
      {[](nlohmann::json& j) {
         j["text_config"]["rope_scaling"] = {{"type", "dynamic"}};
       },
       "dynamic"},
      {[](nlohmann::json& j) { j["text_config"]["layer_types"] = {"linear_attention"}; }, "layer_types"},
      {[](nlohmann::json& j) { j["text_config"].erase("linear_num_key_heads"); }, "linear_num_key_heads"},
      {[](nlohmann::json& j) { j["text_config"]["linear_num_value_heads"] = 40; }, "linear_num_value_heads"},
      {[](nlohmann::json& j) { j["text_config"]["rope_parameters"]["partial_rotary_factor"] = 0.001; },
       "partial_rotary_factor"},
  };
  for (const Case& c : cases) {
    with(c.change);
    auto r = load_qwen35_config(dir.path());
    ASSERT_FALSE(r.ok()) << c.expect;
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
  }
}

TEST(ModelConfigTest, ReadsQwen36SlidingWindowDrafter) {
  ScratchDir dir("cfg35");
  // SpecForge configs/qwen3.6-27b-dflash.json, trimmed.
  const std::string text = R"({"architectures": ["DFlashDraftModel"], "model_type": "qwen3", "block_size": 16,
    "num_target_layers": 64, "dflash_config": {"mask_token_id": 248070, "target_layer_ids": [1, 16, 31, 46, 61]},
    "hidden_size": 5120, "intermediate_size": 17408, "num_hidden_layers": 5, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "rope_theta": 10000000, "rope_scaling": null,
    "vocab_size": 248320, "use_sliding_window": true, "sliding_window": 2048, "max_window_layers": 5,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                    "full_attention"]})";
  write_text(dir / "config.json", text);
  auto c = load_dflash_config(dir.path());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->sliding_layer, (std::vector<bool>{true, true, true, true, false}));
  EXPECT_EQ(c->sliding_window, 2048);
  nlohmann::json j = nlohmann::json::parse(text);
  j.erase("sliding_window");
  write_text(dir / "config.json", j.dump());
  auto missing = load_dflash_config(dir.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("sliding_window"), std::string::npos);
}

}  // namespace
}  // namespace ferry::eval
