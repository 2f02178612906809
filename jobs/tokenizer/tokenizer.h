// Tokenizer: a model's own `tokenizer.json` (Hugging Face's format), for the byte-level
// BPE family Qwen uses: added tokens found first, then NFC, the pre-tokenizer sequence
// (`Split` with the file's regex, `ByteLevel`), BPE with the file's merges; decoding by
// the byte-level decoder. What the file asks for and this class cannot do exactly
// (another model type, normalizer, pre-tokenizer, decoder, or option) is refused at load,
// by name, rather than tokenized differently.
//
// Not thread-safe: encoding fills a word cache and reuses a regex matcher. One tokenizer
// per thread; the eval engine and `ferry tokenize` each own theirs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jobs/tokenizer/added_tokens.h"
#include "jobs/tokenizer/bpe_model.h"
#include "jobs/tokenizer/regex_splitter.h"

namespace ferry::tokenizer {

class Tokenizer {
 public:
  /// Parses tokenizer.json's text; `where` names it in errors.
  static Result<std::unique_ptr<Tokenizer>> from_json(const std::string& json_text, const std::string& where);
  /// Reads `path` (a tokenizer.json, at most 64 MiB).
  static Result<std::unique_ptr<Tokenizer>> from_file(const std::string& path);

  /// Token ids of `text`; invalid UTF-8 is refused with the byte offset, and a split regex
  /// past its time or memory bound fails the encode (never a shorter piece list).
  Result<std::vector<int32_t>> encode(std::string_view text);

  /// The bytes the ids stand for (may end inside a character); unknown ids are skipped.
  std::string decode_bytes(const std::vector<int32_t>& ids) const;
  /// decode_bytes made valid UTF-8 (U+FFFD for broken sequences), as Hugging Face decodes.
  std::string decode(const std::vector<int32_t>& ids) const;

  /// The token as the vocabulary writes it ("Ġworld", "<|im_end|>"); "" for an unknown id.
  const std::string& piece(int32_t id) const;
  /// Id of an added token or vocabulary entry written exactly `text`; -1 if none.
  int32_t token_id(const std::string& text) const;
  /// One past the largest id.
  int32_t vocab_size() const { return static_cast<int32_t>(pieces_.size()); }
  bool normalizes_nfc() const { return nfc_; }
  const AddedTokens& added_tokens() const { return added_; }

 private:
  Tokenizer() = default;
  Status encode_plain(std::string_view text, std::vector<int32_t>* out);

  bool nfc_ = false;
  std::vector<std::unique_ptr<RegexSplitter>> splitters_;  // applied in order
  std::unique_ptr<BpeModel> bpe_;
  AddedTokens added_;
  std::vector<std::string> pieces_;  // id → vocabulary text
  std::vector<std::string> bytes_;   // id → decoded bytes
  std::vector<std::string_view> scratch_a_, scratch_b_;
};

}  // namespace ferry::tokenizer
