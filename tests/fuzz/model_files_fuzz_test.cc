// The eval's readers of files that come with a model or a workflow, on mutated copies of
// valid ones: tokenizer.json (jobs/tokenizer), config.json and the prompt file
// (jobs/eval's torch-free inputs). Each is read or refused with a message naming it, and
// what is read stays in its bounds (ids inside the vocabulary); never a crash or a hang
// (a catastrophic regex from the file must end at ICU's time limit, inside the round's).
#include <gtest/gtest.h>

#include "jobs/eval/io/dflash_config.h"
#include "jobs/eval/io/qwen35_config.h"
#include "jobs/eval/io/qwen3_config.h"
#include "jobs/eval/run/prompt_file.h"
#include "jobs/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_rounds.h"
#include "tests/fuzz/random_input.h"
#include "tests/support/process.h"

namespace ferry::fuzz {
namespace {

using nlohmann::json;

// GPT-2's byte-level alphabet: printable bytes stand for themselves, the rest for
// U+0100 onwards, in byte order ("Ġ" is the space).
std::string byte_level_char(int b) {
  static const std::vector<int> code_points = [] {
    std::vector<int> cp(256, -1);
    int next = 256;
    for (int i = 0; i < 256; ++i) {
      bool printable = (i >= 33 && i <= 126) || (i >= 161 && i <= 172) || (i >= 174 && i <= 255);
      cp[i] = printable ? i : next++;
    }
    return cp;
  }();
  int c = code_points[static_cast<size_t>(b)];
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

// A byte-level BPE file in Qwen's shape, small: every byte's token, two merges.
json tokenizer_seed() {
  json seed = json::parse(R"({
    "version": "1.0",
    "added_tokens": [{"id": 300, "content": "<|endoftext|>", "special": true}],
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "(?i:'s|'t)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"},
       "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
    "post_processor": null,
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "dropout": null, "byte_fallback": false, "ignore_merges": false,
      "vocab": {}, "merges": [["a", "b"], ["\u0120", "ab"]]}})");
  json& vocab = seed["model"]["vocab"];
  for (int b = 0; b < 256; ++b) vocab[byte_level_char(b)] = b;
  vocab["ab"] = 256;
  vocab["\u0120ab"] = 257;
  return seed;
}

json config_seed() {
  return json::parse(R"({"model_type": "qwen3", "block_size": 16, "num_target_layers": 36,
    "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9]},
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 1000, "rope_theta": 1000000,
    "layer_types": ["full_attention", "sliding_attention"], "sliding_window": 8,
    "eos_token_id": [1, 2], "tie_word_embeddings": false})");
}

// A Qwen3.6-style hybrid target under a VLM wrapper (the qwen3_5 reader's fields).
json hybrid_config_seed() {
  return json::parse(R"({"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
    "image_token_id": 90, "eos_token_id": 3, "tie_word_embeddings": false, "vision_config": {"depth": 1},
    "text_config": {"model_type": "qwen3_5_text", "vocab_size": 100, "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 4, "full_attention_interval": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
      "head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
      "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4,
      "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
      "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25}}})");
}

const std::vector<json>& prompt_seeds() {
  static const std::vector<json> seeds = {
      json::parse(R"({"input_ids": [1, 2, 3]})"),
      json::parse(R"({"text": "ab ab"})"),
      json::parse(R"({"prompt": "hello"})"),
      json::parse(R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]})"),
      json::parse(R"({"turns": ["first", "second"]})"),
  };
  return seeds;
}

TEST(ModelFilesFuzzTest, MutatedTokenizerFilesLoadOrAreRefusedByName) {
  FuzzPlan plan = fuzz_plan(1500);
  const json seed = tokenizer_seed();
  ASSERT_TRUE(tokenizer::Tokenizer::from_json(seed.dump(), "seed").ok());
  const std::vector<std::string> texts = {"ab ab", std::string(60, 'a') + "b", "caf\xC3\xA9 <|endoftext|>\n\n  x"};
  int loaded = 0, refused = 0;
  for_each_round(plan, "ModelFilesFuzzTest.tokenizer", [&](Mutator& m, int) {
    std::string text = wire_text(m.mutate_json(seed));
    if (m.chance(20)) text = m.mutate_bytes(text, {});
    auto t = tokenizer::Tokenizer::from_json(text, "fuzz/tokenizer.json");
    if (!t.ok()) {
      ++refused;
      EXPECT_EQ(t.status().message().rfind("fuzz/tokenizer.json: ", 0), 0u) << t.status().message();
    } else {
      ++loaded;
      for (const auto& s : texts) {
        auto ids = (*t)->encode(s);
        if (!ids.ok()) continue;  // an error is an answer; wrong ids are not
        for (int32_t id : *ids) ASSERT_TRUE(id >= 0 && id < (*t)->vocab_size()) << id;
      }
    }
  });
  expect_outcomes(plan, "tokenizers", {{"loaded", loaded, 100}, {"refused", refused, 100}});
}

TEST(ModelFilesFuzzTest, MutatedConfigsLoadOrAreRefusedByName) {
  FuzzPlan plan = fuzz_plan(1500);
  testing::TempDir dir;
  const std::string path = dir.file("config.json");
  int loaded = 0, refused = 0, hybrids = 0;
  for_each_round(plan, "ModelFilesFuzzTest.config", [&](Mutator& m, int) {
    const bool hybrid_seed = m.chance(50);
    std::string text = wire_text(m.mutate_json(hybrid_seed ? hybrid_config_seed() : config_seed()));
    if (m.chance(20)) text = m.mutate_bytes(text, {});
    testing::write_text(path, text);
    auto drafter = eval::load_dflash_config(dir.path());
    auto target = eval::load_qwen3_config(dir.path());
    auto hybrid = eval::load_qwen35_config(dir.path());
    for (const Status& s : {drafter.status(), target.status(), hybrid.status()}) {
      if (!s.ok()) {
        EXPECT_EQ(s.message().rfind(path + ": ", 0), 0u) << s.message();
      }
    }
    if (drafter.ok()) {
      ++loaded;
      EXPECT_EQ(drafter->sliding_layer.size(), static_cast<size_t>(drafter->model.num_hidden_layers));
      EXPECT_LE(drafter->model.num_hidden_layers, 1024);
      EXPECT_LE(drafter->block_size, 1024);
    } else {
      ++refused;
    }
    if (hybrid.ok()) {
      ++hybrids;
      EXPECT_EQ(hybrid->linear_layer.size(), static_cast<size_t>(hybrid->text.num_hidden_layers));
      EXPECT_LE(hybrid->rotary_dim, hybrid->text.head_dim);
      EXPECT_EQ(hybrid->linear_num_value_heads % hybrid->linear_num_key_heads, 0);
    }
  });
  expect_outcomes(plan, "configs",
                  {{"loaded", loaded, 100}, {"refused", refused, 100}, {"hybrids loaded", hybrids, 100}});
}

TEST(ModelFilesFuzzTest, MutatedPromptFilesLoadOrAreRefusedByLine) {
  FuzzPlan plan = fuzz_plan(1500);
  testing::TempDir dir;
  const std::string path = dir.file("prompts.jsonl");
  constexpr int64_t kVocab = 300;  // byte-level: text is encoded without a tokenizer
  eval::PromptEncoder encoder(nullptr, "none", tokenizer::PromptFormat::kChat, kVocab);
  int loaded = 0, refused = 0;
  for_each_round(plan, "ModelFilesFuzzTest.prompts", [&](Mutator& m, int) {
    std::string text;
    const size_t lines = 1 + m.below(2);  // one bad line refuses the file: few lines, both outcomes often
    for (size_t i = 0; i < lines; ++i) {
      const json& seed = prompt_seeds()[m.below(prompt_seeds().size())];
      std::string line = m.chance(70) ? wire_text(m.mutate_json(seed)) : seed.dump();
      if (m.chance(15)) line = m.mutate_bytes(line, {});
      text += line + "\n";
    }
    testing::write_text(path, text);
    auto prompts = eval::load_prompts(path, kVocab, &encoder);
    if (prompts.ok()) {
      ++loaded;
      for (const auto& p : *prompts) {
        ASSERT_FALSE(p.ids.empty());
        for (int64_t id : p.ids) ASSERT_TRUE(id >= 0 && id < kVocab) << id;
      }
    } else {
      ++refused;
      EXPECT_EQ(prompts.status().message().rfind(path + ":", 0), 0u) << prompts.status().message();
    }
  });
  expect_outcomes(plan, "prompt files", {{"loaded", loaded, 100}, {"refused", refused, 100}});
}

}  // namespace
}  // namespace ferry::fuzz
