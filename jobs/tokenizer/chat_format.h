// The Qwen family's chat format (ChatML), as the models' own Jinja chat_template renders
// it for conversations without tools: an optional leading system message, user and
// assistant turns (earlier assistant turns lose their <think> block, turns after the last
// user message keep it), and the assistant generation prompt, with thinking on or off
// (off appends an empty "<think>\n\n</think>\n\n"). Checked against @huggingface/jinja
// rendering Qwen3's tokenizer_config.json template (tests/tokenizer/chat_format_test.cc).
// Plain functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace ferry::tokenizer {

/// How an eval turns a prompt into model input.
enum class PromptFormat {
  kRaw,          // the text as is
  kChat,         // ChatML user turn + generation prompt, thinking on
  kChatNoThink,  // ChatML, thinking off
};

/// "raw" | "chat" | "chat-no-think".
Result<PromptFormat> parse_prompt_format(const std::string& name);
const char* prompt_format_name(PromptFormat format);

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
  std::optional<std::string> reasoning_content;  // an assistant's thinking, when given apart
};

/// The conversation rendered with the assistant generation prompt. Roles other than
/// system, user and assistant (tool calls, tool results) are refused by name.
Result<std::string> render_chatml(const std::vector<ChatMessage>& messages, bool thinking);

}  // namespace ferry::tokenizer
