#include "jobs/eval/run/prompt_file.h"

#include <cerrno>
#include <fstream>

#include <xxhash.h>
#include <nlohmann/json.hpp>

#include "base/file_hash.h"
#include "base/json_depth.h"

namespace ferry::eval {
namespace {

using nlohmann::json;
using tokenizer::ChatMessage;

const char* const kForms[] = {"input_ids", "text", "prompt", "messages", "turns"};
// Enough to fix a file in one pass without flooding the terminal.
constexpr size_t kMaxErrorsReported = 50;
// Far past any context window's worth of text or ids; a longer line is refused unread.
constexpr size_t kMaxLineBytes = 16 << 20;

// The next line of `in` (without its '\n') into *line; false at the end of the file. A
// line past kMaxLineBytes is skipped to its end and *too_long set, not held in memory.
bool next_line(std::istream& in, std::string* line, bool* too_long) {
  std::streambuf* buf = in.rdbuf();
  line->clear();
  *too_long = false;
  int c = buf->sbumpc();
  if (c == std::char_traits<char>::eof()) return false;
  for (; c != std::char_traits<char>::eof() && c != '\n'; c = buf->sbumpc()) {
    if (line->size() < kMaxLineBytes) {
      line->push_back(static_cast<char>(c));
    } else {
      *too_long = true;
    }
  }
  return true;
}

Result<std::vector<int64_t>> ids_of(const json& v, int64_t vocab_size) {
  if (!v.is_array()) return invalid_argument("must be a list of token ids");
  std::vector<int64_t> ids;
  for (const auto& x : v) {
    if (!x.is_number_integer())
      return invalid_argument(std::string("must hold integers, found a value of type ") + x.type_name());
    int64_t id = x.get<int64_t>();
    if (id < 0 || id >= vocab_size) {
      return invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (" +
                              std::to_string(vocab_size) + ")");
    }
    ids.push_back(id);
  }
  return ids;
}

Result<std::vector<ChatMessage>> messages_of(const json& v) {
  if (!v.is_array() || v.empty()) return invalid_argument("must be a non-empty list of {\"role\", \"content\"}");
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < v.size(); ++i) {
    const json& m = v[i];
    const std::string at = "message " + std::to_string(i + 1) + ": ";
    if (!m.is_object()) return invalid_argument(at + "not an object");
    if (!m.contains("role") || !m["role"].is_string()) return invalid_argument(at + "'role' must be a string");
    if (!m.contains("content") || !m["content"].is_string()) return invalid_argument(at + "'content' must be a string");
    ChatMessage c{m["role"].get<std::string>(), m["content"].get<std::string>(), std::nullopt};
    if (m.contains("reasoning_content") && !m["reasoning_content"].is_null()) {
      if (!m["reasoning_content"].is_string()) return invalid_argument(at + "'reasoning_content' must be a string");
      c.reasoning_content = m["reasoning_content"].get<std::string>();
    }
    messages.push_back(std::move(c));
  }
  return messages;
}

// The ids of one line's prompt, from whichever form it has; errors say what is wrong
// with the value (the caller names the file, line and field).
Result<std::vector<int64_t>> encode_field(const std::string& field, const json& v, int64_t vocab_size,
                                          PromptEncoder* encoder) {
  if (field == "input_ids") return ids_of(v, vocab_size);
  if (field == "text") {
    if (!v.is_string()) return invalid_argument("must be a string");
    return encoder->encode_text(v.get<std::string>());
  }
  if (field == "prompt") {
    if (!v.is_string()) return invalid_argument("must be a string");
    return encoder->encode_chat({{"user", v.get<std::string>(), std::nullopt}});
  }
  if (field == "turns") {
    if (!v.is_array() || v.empty() || !v[0].is_string()) return invalid_argument("must be a non-empty list of strings");
    return encoder->encode_chat({{"user", v[0].get<std::string>(), std::nullopt}});
  }
  auto messages = messages_of(v);
  if (!messages.ok()) return messages.status();
  return encoder->encode_chat(*messages);
}

// The JSON object of one line, or an error that says where and why.
Result<json> parse_line_object(const std::string& text, const std::string& at) {
  FERRY_RETURN_IF_ERROR(check_json_depth(text, at));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    // "... column 12: ... invalid string: ill-formed UTF-8 byte; last read: '...'": the
    // column and the reason; not the echo of the input, which may be invalid UTF-8.
    std::string why = e.what();
    size_t column = why.find("column");
    why = column == std::string::npos ? why : why.substr(column);
    why = why.substr(0, why.find("; last read"));
    return invalid_argument(at + ": not valid JSON (" + why + ")");
  }
  if (!j.is_object()) return invalid_argument(at + ": not a JSON object");
  return j;
}

// The prompt of one non-blank line: exactly one of kForms, encoded, non-empty, and
// inside the vocabulary; errors start with `at` (file:line).
Result<std::vector<int64_t>> prompt_of_line(const std::string& text, const std::string& at, int64_t vocab_size,
                                            PromptEncoder* encoder) {
  auto j = parse_line_object(text, at);
  if (!j.ok()) return j.status();
  std::string field, second;
  for (const char* f : kForms) {
    if (!j->contains(f)) continue;
    (field.empty() ? field : second) = f;
  }
  if (!second.empty()) return invalid_argument(at + ": has both '" + field + "' and '" + second + "'; give one");
  if (field.empty()) {
    return invalid_argument(at + ": needs one of 'input_ids', 'text', 'prompt', 'messages', 'turns'");
  }
  const std::string where = at + ": '" + field + "': ";
  auto ids = encode_field(field, (*j)[field], vocab_size, encoder);
  if (!ids.ok()) return invalid_argument(where + ids.status().message());
  if (ids->empty()) return invalid_argument(where + "empty prompt");
  for (int64_t id : *ids) {
    if (id >= vocab_size) {
      return invalid_argument(where + "token id " + std::to_string(id) + " is outside the vocabulary (" +
                              std::to_string(vocab_size) + ")");
    }
  }
  return ids;
}

}  // namespace

Result<std::vector<Prompt>> load_prompts(const std::string& path, int64_t vocab_size, PromptEncoder* encoder) {
  std::ifstream in(path);
  if (!in) return errno_status(path + ": cannot open", errno);
  std::vector<Prompt> prompts;
  std::vector<std::string> errors;  // every bad line is reported, not just the first
  std::string text;
  bool too_long = false;
  int line = 0;
  while (next_line(in, &text, &too_long)) {
    ++line;
    const std::string at = path + ":" + std::to_string(line);
    if (!too_long && text.find_first_not_of(" \t\r") == std::string::npos) continue;  // a blank line
    auto ids = too_long ? Result<std::vector<int64_t>>(
                              invalid_argument(at + ": longer than " + std::to_string(kMaxLineBytes) + " bytes"))
                        : prompt_of_line(text, at, vocab_size, encoder);
    if (ids.ok()) {
      prompts.push_back({line, std::move(*ids), static_cast<int64_t>(prompts.size())});
    } else if (errors.size() < kMaxErrorsReported) {
      errors.push_back(ids.status().message());
    }
  }
  if (!errors.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : "\n") + e;
    return invalid_argument(all);
  }
  if (prompts.empty()) return invalid_argument(path + ": no prompts");
  return prompts;
}

std::string prompts_fingerprint(const std::vector<Prompt>& prompts) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  for (const Prompt& p : prompts) {
    const int64_t head[2] = {p.line, static_cast<int64_t>(p.ids.size())};  // so the prompts stay apart
    XXH3_128bits_update(st, head, sizeof head);
    XXH3_128bits_update(st, p.ids.data(), p.ids.size() * sizeof(int64_t));
  }
  const XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  return xxh128_canonical_hex(h);
}

}  // namespace ferry::eval
