#include "jobs/tokenizer/chat_format.h"

#include "base/enum_names.h"

namespace ferry::tokenizer {
namespace {

constexpr EnumName<PromptFormat> kPromptFormatNames[] = {
    {PromptFormat::kRaw, "raw"}, {PromptFormat::kChat, "chat"}, {PromptFormat::kChatNoThink, "chat-no-think"}};

// Jinja's str.strip/lstrip/rstrip with '\n' as the only character removed.
std::string lstrip_newlines(const std::string& s) {
  size_t b = s.find_first_not_of('\n');
  return b == std::string::npos ? "" : s.substr(b);
}
std::string rstrip_newlines(const std::string& s) {
  size_t e = s.find_last_not_of('\n');
  return e == std::string::npos ? "" : s.substr(0, e + 1);
}
bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// A user message that only carries a tool's result does not count as the last query.
bool is_tool_response(const std::string& content) {
  return starts_with(content, "<tool_response>") && ends_with(content, "</tool_response>");
}

}  // namespace

Result<PromptFormat> parse_prompt_format(const std::string& name) {
  if (auto format = enum_from_name(kPromptFormatNames, name)) return *format;
  return invalid_argument("prompt format '" + name + "' is unknown (" + enum_names(kPromptFormatNames) + ")");
}

const char* prompt_format_name(PromptFormat format) { return enum_name(kPromptFormatNames, format); }

Result<std::string> render_chatml(const std::vector<ChatMessage>& messages, bool thinking) {
  const int n = static_cast<int>(messages.size());
  for (int i = 0; i < n; ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant") {
      return invalid_argument("message " + std::to_string(i + 1) + ": role '" + role +
                              "' is not supported (system, user, assistant)");
    }
  }
  std::string out;
  if (n > 0 && messages[0].role == "system") out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
  int last_query = n - 1;
  for (int i = n - 1; i >= 0; --i) {
    if (messages[i].role == "user" && !is_tool_response(messages[i].content)) {
      last_query = i;
      break;
    }
  }
  for (int i = 0; i < n; ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i > 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      std::string content = m.content;
      std::string reasoning;
      if (m.reasoning_content) {
        reasoning = *m.reasoning_content;
      } else if (content.find("</think>") != std::string::npos) {
        const std::string before_end = content.substr(0, content.find("</think>"));
        std::string r = rstrip_newlines(before_end);
        size_t open = r.rfind("<think>");
        reasoning = lstrip_newlines(open == std::string::npos ? r : r.substr(open + 7));
        content = lstrip_newlines(content.substr(content.rfind("</think>") + 8));
      }
      out += "<|im_start|>assistant\n";
      if (i > last_query && (i == n - 1 || !reasoning.empty())) {
        out += "<think>\n" + rstrip_newlines(lstrip_newlines(reasoning)) + "\n</think>\n\n" + lstrip_newlines(content);
      } else {
        out += content;
      }
      out += "<|im_end|>\n";
    }
  }
  out += "<|im_start|>assistant\n";
  if (!thinking) out += "<think>\n\n</think>\n\n";
  return out;
}

}  // namespace ferry::tokenizer
