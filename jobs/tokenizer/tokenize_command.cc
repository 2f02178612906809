#include "jobs/tokenizer/tokenize_command.h"

#include <sys/stat.h>

#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "jobs/tokenizer/chat_format.h"
#include "jobs/tokenizer/tokenizer.h"
#include "jobs/tokenizer/utf8.h"

namespace ferry::tokenizer {
namespace {

constexpr const char* kUsage =
    "usage: ferry tokenize --model DIR [--chat|--chat-no-think] [--json] [TEXT | -]\n"
    "example:\n  ferry tokenize --model models/Qwen3-8B --chat 'What is 2+2?'\n";
constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

bool is_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A JSON string literal: shows newlines, tabs and invisible characters.
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

int tokenize_command_main(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                          std::ostream& err) {
  std::string model;
  PromptFormat format = PromptFormat::kRaw;
  bool json = false;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out << kUsage;
      return kExitOk;
    } else if (a == "--model" && i + 1 < args.size()) {
      model = args[++i];
    } else if (a == "--chat") {
      format = PromptFormat::kChat;
    } else if (a == "--chat-no-think") {
      format = PromptFormat::kChatNoThink;
    } else if (a == "--json") {
      json = true;
    } else if (a.size() > 1 && a[0] == '-' && a != "-") {
      err << "ferry tokenize: unknown flag " << a << "\n" << kUsage;
      return kExitUsage;
    } else {
      positional.push_back(a);
    }
  }
  if (model.empty() || positional.size() > 1) {
    err << "ferry tokenize: " << (model.empty() ? "--model is required" : "give one TEXT (or - for stdin)") << "\n"
        << kUsage;
    return kExitUsage;
  }
  std::string text;
  if (positional.empty() || positional[0] == "-") {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else {
    text = positional[0];
  }
  const std::string path = is_dir(model) ? model + "/tokenizer.json" : model;
  auto tokenizer = Tokenizer::from_file(path);
  if (!tokenizer.ok()) {
    err << "ferry tokenize: " << tokenizer.status().message() << "\n";
    return kExitUsage;
  }
  if (format != PromptFormat::kRaw) {
    auto rendered = render_chatml({{"user", text, std::nullopt}}, format == PromptFormat::kChat);
    if (!rendered.ok()) {
      err << "ferry tokenize: " << rendered.status().message() << "\n";
      return kExitUsage;
    }
    text = *rendered;
  }
  auto ids = (*tokenizer)->encode(text);
  if (!ids.ok()) {
    err << "ferry tokenize: " << ids.status().message() << "\n";
    return kExitUsage;
  }
  if (json) {
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id : *ids) pieces.push_back((*tokenizer)->piece(id));
    nlohmann::json j = {{"text", text}, {"ids", *ids}, {"pieces", pieces}};
    out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  out << ids->size() << " tokens (" << prompt_format_name(format) << ", " << path << ")\n";
  for (int32_t id : *ids) {
    out << id << "\t" << (*tokenizer)->piece(id) << "\t" << quoted(utf8_lossy((*tokenizer)->decode_bytes({id})))
        << "\n";
  }
  return kExitOk;
}

}  // namespace ferry::tokenizer
