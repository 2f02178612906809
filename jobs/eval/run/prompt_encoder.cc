#include "jobs/eval/run/prompt_encoder.h"

#include <sys/stat.h>

namespace ferry::eval {
namespace {

// A vocabulary this small is bytes plus a few specials: text may go in as raw bytes.
constexpr int64_t kByteVocabMin = 256;
constexpr int64_t kByteVocabMax = 512;

bool is_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

PromptEncoder::PromptEncoder(std::unique_ptr<tokenizer::Tokenizer> tokenizer, std::string tokenizer_path,
                             tokenizer::PromptFormat format, int64_t vocab_size)
    : tokenizer_(std::move(tokenizer)),
      tokenizer_path_(std::move(tokenizer_path)),
      format_(format),
      vocab_size_(vocab_size) {}

Result<PromptEncoder> PromptEncoder::open(const std::string& tokenizer_dir, const std::string& target_dir,
                                          tokenizer::PromptFormat format, int64_t vocab_size) {
  const std::string path = (tokenizer_dir.empty() ? target_dir : tokenizer_dir) + "/tokenizer.json";
  if (!is_file(path)) {
    if (!tokenizer_dir.empty())
      return not_found(path + ": no such file (--tokenizer names a folder with tokenizer.json)");
    return PromptEncoder(nullptr, path, format, vocab_size);
  }
  auto t = tokenizer::Tokenizer::from_file(path);
  if (!t.ok()) return t.status();
  if ((*t)->vocab_size() > vocab_size) {
    return invalid_argument(path + ": tokenizer has ids up to " + std::to_string((*t)->vocab_size() - 1) +
                            " but the target's vocabulary has " + std::to_string(vocab_size));
  }
  return PromptEncoder(std::move(*t), path, format, vocab_size);
}

Result<std::vector<int64_t>> PromptEncoder::encode_text(const std::string& text) {
  std::vector<int64_t> ids;
  if (tokenizer_) {
    auto r = tokenizer_->encode(text);
    if (!r.ok()) return r.status();
    ids.assign(r->begin(), r->end());
    return ids;
  }
  if (vocab_size_ < kByteVocabMin || vocab_size_ > kByteVocabMax) {
    return invalid_argument("no tokenizer (" + tokenizer_path_ + " is missing) and the target's vocabulary (" +
                            std::to_string(vocab_size_) + ") is not byte-level; give --tokenizer DIR or 'input_ids'");
  }
  for (unsigned char ch : text) ids.push_back(ch);
  return ids;
}

Result<std::vector<int64_t>> PromptEncoder::encode_chat(const std::vector<tokenizer::ChatMessage>& messages) {
  if (format_ == tokenizer::PromptFormat::kRaw) {
    if (messages.size() != 1 || messages[0].role != "user") {
      return invalid_argument("a conversation needs prompt_format chat or chat-no-think (raw takes one user turn)");
    }
    return encode_text(messages[0].content);
  }
  if (!tokenizer_) {
    return invalid_argument("prompt_format " + std::string(tokenizer::prompt_format_name(format_)) +
                            " needs the model's tokenizer (" + tokenizer_path_ +
                            " is missing); give --tokenizer DIR or use prompt_format raw");
  }
  if (tokenizer_->token_id("<|im_start|>") < 0) {
    return invalid_argument(tokenizer_path_ +
                            " has no <|im_start|> token: not a ChatML (Qwen) tokenizer; use prompt_format raw");
  }
  auto text = tokenizer::render_chatml(messages, format_ == tokenizer::PromptFormat::kChat);
  if (!text.ok()) return text.status();
  return encode_text(*text);
}

}  // namespace ferry::eval
