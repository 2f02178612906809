// The target family table (jobs/eval/models/families): which row a config.json is, and
// the refusal of a model_type no row holds. The Llama checkpoint is a tiny Qwen3 one
// whose config.json says `llama`: same tensor names and shapes, so only the table
// stands between it and an eval that computes it as a Qwen3 (which `ferry eval` did,
// exit 0, before the table).
#include "jobs/eval/models/families.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/eval/eval_test_util.h"
#include "tests/eval/model_suite.h"

namespace ferry::eval {
namespace {

using nlohmann::json;
using testing::ScratchDir;

// The message names the file, what it found, and every family with its model_types.
void expect_refusal(const Status& s, const std::string& path, const std::string& found) {
  ASSERT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
  EXPECT_NE(m.find(found), std::string::npos) << m;
  EXPECT_NE(m.find("supported target families: qwen3 (model_type qwen3, qwen3_vl, qwen3_vl_text); "
                   "qwen3_5 (model_type qwen3_5, qwen3_5_text)"),
            std::string::npos)
      << m;
}

// Rewrites `folder`/config.json through `change`.
void edit_config(const std::string& folder, const std::function<void(json&)>& change) {
  json j = json::parse(testing::read_text(folder + "/config.json"));
  change(j);
  testing::write_text(folder + "/config.json", j.dump());
}

class TargetFamiliesTest : public testing::ModelSuiteTest<TargetFamiliesTest> {
 public:
  static void write_models() {
    TinyWriteSpec vlm;
    vlm.vlm_wrapped = true;
    ASSERT_TRUE(write_tiny_target(*dir_ / "qwen3", testing::random_target_spec(), {}).ok());
    ASSERT_TRUE(write_tiny_target(*dir_ / "qwen3-vlm", testing::random_target_spec(), vlm).ok());
    ASSERT_TRUE(write_tiny_target(*dir_ / "qwen3_5", testing::hybrid_target_spec(), {}).ok());
    ASSERT_TRUE(write_tiny_target(*dir_ / "qwen3_5-vlm", testing::hybrid_target_spec(), vlm).ok());
    ASSERT_TRUE(write_tiny_target(*dir_ / "llama", testing::random_target_spec(), {}).ok());
    edit_config(*dir_ / "llama", [](json& j) {
      j["model_type"] = "llama";
      j["architectures"] = {"LlamaForCausalLM"};
    });
    ASSERT_TRUE(write_tiny_drafter(*dir_ / "drafter", testing::random_drafter_spec(), {}).ok());
    ASSERT_TRUE(write_tiny_prompts(*dir_ / "prompts.jsonl", 2, 320, 3, 6, 5).ok());
  }

 protected:
};

// Each tiny checkpoint, plain and VLM-wrapped, finds its row; the row's config reader
// gives the dimensions the loaded model reports, and the model describes itself as it.
TEST_F(TargetFamiliesTest, EachFamilyIsReadAndLoadedThroughItsRow) {
  for (const std::string name : {"qwen3", "qwen3-vlm", "qwen3_5", "qwen3_5-vlm"}) {
    SCOPED_TRACE(name);
    const std::string folder = *dir_ / name;
    auto family = detect_target_architecture(folder);
    ASSERT_TRUE(family.ok()) << family.status().message();
    const std::string expected = name.substr(0, name.find('-'));
    EXPECT_EQ((*family)->name, expected);
    auto config = (*family)->read_config(folder);
    ASSERT_TRUE(config.ok()) << config.status().message();
    auto target = load_target(folder, {}, nullptr);
    ASSERT_TRUE(target.ok()) << target.status().message();
    const DecoderConfig& loaded = (*target)->config();
    EXPECT_EQ(config->vocab_size, loaded.vocab_size);
    EXPECT_EQ(config->hidden_size, loaded.hidden_size);
    EXPECT_EQ(config->num_hidden_layers, loaded.num_hidden_layers);
    EXPECT_EQ(config->vlm_wrapped, name.find("vlm") != std::string::npos);
    EXPECT_EQ((*target)->describe().rfind(expected + ": ", 0), 0u) << (*target)->describe();
  }
}

TEST_F(TargetFamiliesTest, ALlamaCheckpointIsRefusedByName) {
  const std::string folder = *dir_ / "llama";
  expect_refusal(load_target(folder, {}, nullptr).status(), folder + "/config.json", "model_type 'llama'");

  // Through `ferry eval` (ferry-eval is the same command standalone): refused before
  // any weight is read, exit 2, the message on stderr.
  auto r =
      ferry::testing::run_process({FERRY_EVAL_BIN, "--target", folder, "--drafter", *dir_ / "drafter", "--prompts",
                                   *dir_ / "prompts.jsonl", "--max-new-tokens", "4", "--threads", "1", "--no-baseline"},
                                  {}, 120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(folder + "/config.json: model_type 'llama' is not supported; supported target families: "
                                "qwen3 (model_type qwen3, qwen3_vl, qwen3_vl_text); qwen3_5"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");
}

// Every model_type a config names must be in the table: a known wrapper does not carry
// an unknown backbone, nor a known backbone an unknown (mixture-of-experts) wrapper.
// architectures decide only where no model_type is given.
TEST_F(TargetFamiliesTest, EveryModelTypeMustBeKnownAndArchitecturesDecideOnlyWithoutOne) {
  ScratchDir dir("families-cfg");
  const std::string path = dir / "config.json";
  struct Case {
    json config;
    std::string family;  // empty: refused, naming `found`
    std::string found;
  };
  const std::vector<Case> cases = {
      {{{"model_type", "qwen3_5_moe"}, {"text_config", {{"model_type", "qwen3_5_text"}}}}, "", "'qwen3_5_moe'"},
      {{{"model_type", "qwen3_5_moe_text"}}, "", "'qwen3_5_moe_text'"},
      {{{"model_type", "qwen3_vl"}, {"text_config", {{"model_type", "llama"}}}}, "", "'llama'"},
      {{{"model_type", "mistral"}, {"architectures", {"Qwen3ForCausalLM"}}}, "", "'mistral'"},
      {{{"model_type", std::string(5000, 'x')}}, "", "'" + std::string(80, 'x') + "...' is not supported"},
      {{{"architectures", {"LlamaForCausalLM"}}}, "", "no 'model_type'"},
      {json::object(), "", "no 'model_type'"},
      {{{"model_type", "qwen3_vl"}, {"text_config", {{"model_type", "qwen3_vl_text"}}}}, "qwen3", ""},
      {{{"model_type", "qwen3_5"}, {"text_config", json::object()}}, "qwen3_5", ""},
      {{{"model_type", "qwen3_5_text"}}, "qwen3_5", ""},
      {{{"architectures", {"Qwen3_5ForCausalLM"}}}, "qwen3_5", ""},
      {{{"architectures", {"Qwen3ForCausalLM"}}}, "qwen3", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.config.dump());
    testing::write_text(path, c.config.dump());
    auto family = detect_target_architecture(dir.path());
    if (c.family.empty()) {
      expect_refusal(family.status(), path, c.found);
    } else {
      ASSERT_TRUE(family.ok()) << family.status().message();
      EXPECT_EQ((*family)->name, c.family);
    }
  }
}

}  // namespace
}  // namespace ferry::eval
