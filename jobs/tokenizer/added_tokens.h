// AddedTokens: the tokens tokenizer.json lists under `added_tokens` (<|im_start|>,
// <think>, ...). They are found in the raw text before normalization and BPE, so a
// prompt that contains "<|im_end|>" gets that one id, as Hugging Face does (its
// `split_special_tokens` is false for the Qwen family). At each position the longest
// token that starts there wins; the scan goes left to right.
// Immutable after construction; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::tokenizer {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool special = false;
};

class AddedTokens {
 public:
  AddedTokens() = default;
  explicit AddedTokens(std::vector<AddedToken> tokens);

  /// One piece of text: either an added token or the plain text between them.
  struct Piece {
    std::string_view text;
    int32_t id = -1;  // the added token's id; -1 for plain text
  };
  /// Cuts `text` into plain runs and added tokens, in order.
  std::vector<Piece> split(std::string_view text) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;  // longest first, so the first match at a position is the longest
  bool starts_[256] = {};           // which first bytes can begin a token
};

}  // namespace ferry::tokenizer
