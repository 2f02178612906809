// RegexSplitter: the `Split` pre-tokenizer — cuts text into pieces at the matches of the
// tokenizer file's own regex (ICU's regex engine; this file and nfc_normalizer.cc are
// the only ICU includes). The file's patterns are written for Oniguruma, the engine of
// Hugging Face's Rust tokenizers. Its `\s` is Unicode White_Space (with \v and U+0085);
// ICU's documentation gives `\s` as [\t\n\f\r\p{Z}] (without them), so `\s`/`\S` are
// spelled out as `\p{White_Space}`/`\P{White_Space}` rather than left to that reading.
//
// The pattern comes from the file, so a match is bounded in time and backtracking memory
// (kMatchTimeLimit, kMatchStackBytes): a catastrophic pattern such as `(a+)+b` fails the
// split with ICU's error rather than hanging, and no error is taken for the end of text.
//
// Not thread-safe: a splitter keeps its matcher between calls; one per thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ferry::tokenizer {

/// What happens to the matched text (Hugging Face `SplitDelimiterBehavior`).
enum class SplitBehavior { kIsolated, kRemoved };

class RegexSplitter {
 public:
  /// `pattern` is a regex, or a literal when `literal` is set. Errors name the pattern.
  static Result<std::unique_ptr<RegexSplitter>> create(const std::string& pattern, bool literal,
                                                       SplitBehavior behavior);
  ~RegexSplitter();

  /// Appends to `out` the pieces of `text` (valid UTF-8), as byte ranges into it. A match
  /// past the time or memory bound, or text past 2 GiB, is an error (nothing appended).
  Status split(std::string_view text, std::vector<std::string_view>* out);

  /// The pattern as given to ICU (after the dialect rewrite), for error messages and tests.
  const std::string& icu_pattern() const { return icu_pattern_; }

 private:
  struct Impl;
  RegexSplitter(std::unique_ptr<Impl> impl, std::string icu_pattern, SplitBehavior behavior);
  std::unique_ptr<Impl> impl_;
  std::string icu_pattern_;
  SplitBehavior behavior_;
};

/// Oniguruma → ICU: `\s` and `\S` (outside or inside brackets) become White_Space classes.
std::string oniguruma_to_icu(const std::string& pattern);

}  // namespace ferry::tokenizer
