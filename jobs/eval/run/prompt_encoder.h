// PromptEncoder: turns a prompt's text or chat into the target's token ids — through the
// model's own tokenizer.json when there is one, else as raw bytes, but only for a
// byte-level vocabulary (256..512 ids, as the tiny test models have); a real vocabulary
// without its tokenizer is refused rather than fed the wrong tokens. The chat forms go
// through the Qwen chat format (jobs/tokenizer/chat_format.h) unless the format is raw.
// Torch-free. One thread at a time (the tokenizer's cache).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/tokenizer/chat_format.h"
#include "jobs/tokenizer/tokenizer.h"

namespace ferry::eval {

class PromptEncoder {
 public:
  /// `tokenizer` may be null; `tokenizer_path` names it in messages.
  PromptEncoder(std::unique_ptr<tokenizer::Tokenizer> tokenizer, std::string tokenizer_path,
                tokenizer::PromptFormat format, int64_t vocab_size);

  /// Finds DIR/tokenizer.json (`tokenizer_dir`, else the target folder; it is optional
  /// there but required when named) and checks its ids fit the vocabulary.
  static Result<PromptEncoder> open(const std::string& tokenizer_dir, const std::string& target_dir,
                                    tokenizer::PromptFormat format, int64_t vocab_size);

  /// The text as is (no chat format).
  Result<std::vector<int64_t>> encode_text(const std::string& text);
  /// A conversation: ChatML with the generation prompt for chat formats. Under raw, a
  /// single user message is its text as is, and anything longer is refused.
  Result<std::vector<int64_t>> encode_chat(const std::vector<tokenizer::ChatMessage>& messages);

  tokenizer::Tokenizer* tokenizer() { return tokenizer_.get(); }
  tokenizer::PromptFormat format() const { return format_; }

 private:
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
  std::string tokenizer_path_;
  tokenizer::PromptFormat format_;
  int64_t vocab_size_;
};

}  // namespace ferry::eval
