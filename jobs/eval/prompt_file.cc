#include "jobs/eval/prompt_file.h"

#include <cerrno>
#include <fstream>

#include <nlohmann/json.hpp>

namespace ferry::eval {

Result<std::vector<Prompt>> load_prompts(const std::string& path, int64_t vocab_size) {
  std::ifstream in(path);
  if (!in) return errno_status(path + ": cannot open", errno);
  std::vector<Prompt> prompts;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    const std::string where = path + ":" + std::to_string(line) + ": ";
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return invalid_argument(where + "not a JSON object");
    Prompt p;
    p.line = line;
    if (j.contains("input_ids")) {
      if (!j["input_ids"].is_array()) return invalid_argument(where + "'input_ids' must be a list");
      for (const auto& x : j["input_ids"]) {
        if (!x.is_number_integer()) return invalid_argument(where + "'input_ids' must hold integers");
        int64_t id = x.get<int64_t>();
        if (id < 0 || id >= vocab_size) {
          return invalid_argument(where + "token id " + std::to_string(id) + " is outside the vocabulary (" +
                                  std::to_string(vocab_size) + ")");
        }
        p.ids.push_back(id);
      }
    } else if (j.contains("text")) {
      if (!j["text"].is_string()) return invalid_argument(where + "'text' must be a string");
      if (vocab_size < 256) {
        return invalid_argument(where + "'text' needs a byte-level vocabulary (>= 256 ids); this target has " +
                                std::to_string(vocab_size) + "; give 'input_ids'");
      }
      for (unsigned char ch : j["text"].get<std::string>()) p.ids.push_back(ch);
    } else {
      return invalid_argument(where + "needs 'input_ids' or 'text'");
    }
    if (p.ids.empty()) return invalid_argument(where + "empty prompt");
    prompts.push_back(std::move(p));
  }
  if (prompts.empty()) return invalid_argument(path + ": no prompts");
  return prompts;
}

}  // namespace ferry::eval
