// config.json and prompt files come with the model and the workflow, from wherever those
// came from: what they can ask for is bounded, and past a bound the reader gives an error
// naming the file (and line), never a crash, a hang or a gigabyte allocation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "jobs/eval/io/dflash_config.h"
#include "jobs/eval/io/qwen3_config.h"
#include "jobs/eval/run/prompt_file.h"
#include "tests/support/process.h"

namespace ferry::eval {
namespace {

using ferry::testing::TempDir;
using ferry::testing::write_text;

std::string nested_array(int levels) { return std::string(levels, '[') + "1" + std::string(levels, ']'); }

// A valid DFlash drafter config.json with `extra` fields appended (a later key wins).
std::string dflash_config(const std::string& extra) {
  return R"({"model_type": "qwen3", "block_size": 16, "num_target_layers": 36,
    "dflash_config": {"mask_token_id": 151669},
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1000)" +
         extra + "}";
}

TEST(UntrustedConfigTest, TheUnchangedConfigLoads) {
  TempDir dir;
  write_text(dir.file("config.json"), dflash_config(""));
  auto c = load_dflash_config(dir.path());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->model.num_hidden_layers, 2);
}

TEST(UntrustedConfigTest, SizesPastTheBoundsAreRefusedBeforeAnythingIsAllocated) {
  // 2^36 layers zero-filled an 8 GiB table and looped 2^36 times for the layer ids.
  struct Case {
    std::string extra;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {R"(, "num_hidden_layers": 68719476736)", "'num_hidden_layers' is 68719476736; at most 1024 is supported"},
      {R"(, "num_target_layers": 68719476736)", "'num_target_layers' is 68719476736; at most 1024 is supported"},
      {R"(, "block_size": 1099511627776)", "'block_size' is 1099511627776; at most 1024 is supported"},
      {R"(, "vocab_size": 1099511627776)", "'vocab_size' is 1099511627776; at most 16777216 is supported"},
      {R"(, "hidden_size": 1099511627776)", "'hidden_size' is 1099511627776; at most 1048576 is supported"},
      {R"(, "intermediate_size": 1099511627776)", "'intermediate_size' is 1099511627776; at most 1048576"},
      {R"(, "head_dim": 1099511627776)", "'head_dim' is 1099511627776; at most 1048576 is supported"},
      {R"(, "layer_types": ["full_attention", {"a": [1]}])", "layer_types[1] is a value of type object;"},
      {R"(, "layer_types": )" + nested_array(200000), "config.json: nested deeper than 64 levels"},
  };
  for (const auto& c : cases) {
    TempDir dir;
    write_text(dir.file("config.json"), dflash_config(c.extra));
    auto config = load_dflash_config(dir.path());
    ASSERT_FALSE(config.ok()) << c.extra.substr(0, 60);
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(config.status().message().find(c.expected), std::string::npos) << config.status().message();
    EXPECT_EQ(config.status().message().rfind(dir.file("config.json") + ": ", 0), 0u) << config.status().message();
  }
  // A target's layer count is bounded too (it allocated nothing, but loops over it later).
  TempDir dir;
  write_text(dir.file("config.json"), dflash_config(R"(, "num_hidden_layers": 68719476736)"));
  auto target = load_qwen3_config(dir.path());
  ASSERT_FALSE(target.ok());
  EXPECT_NE(target.status().message().find("at most 1024"), std::string::npos) << target.status().message();
}

TEST(UntrustedConfigTest, AConfigOver16MiBIsRefused) {
  TempDir dir;
  const std::string path = dir.file("config.json");
  write_text(path, dflash_config(""));
  ASSERT_EQ(::truncate(path.c_str(), (16 << 20) + 1), 0);
  auto c = load_dflash_config(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), path + ": larger than 16777216 bytes");
}

TEST(UntrustedPromptFileTest, DeepAndLongLinesAreRefusedNamingTheLine) {
  TempDir dir;
  const std::string path = dir.file("prompts.jsonl");
  write_text(path, std::string(R"({"input_ids": [1, 2]})") + "\n" + R"({"input_ids": )" + nested_array(200000) +
                       "}\n" +  // dump()ed, it overflowed the stack
                       R"({"input_ids": [1, [2]]})" + "\n" + R"({"text": ")" + std::string((16 << 20) + 1, 'x') +
                       "\"}\n" + R"({"input_ids": [3]})" + "\n");
  auto prompts = load_prompts(path, 1000, /*encoder=*/nullptr);
  ASSERT_FALSE(prompts.ok());
  EXPECT_EQ(prompts.status().message(), path + ":2: nested deeper than 64 levels\n" + path +
                                            ":3: 'input_ids': must hold integers, found a value of type array\n" +
                                            path + ":4: longer than 16777216 bytes");
}

}  // namespace
}  // namespace ferry::eval
