// A varied text corpus for the tokenizer tests and benchmark, generated from a seed (the
// same strings every run): code, maths, CJK, emoji (ZWJ sequences, flags, skin tones),
// combining marks in composed and decomposed form, scripts with marks (Devanagari,
// Thai, Arabic, Hebrew, Vietnamese), whitespace and newline runs (tabs, CR LF, NBSP,
// U+3000, U+2028, \v, U+0085), contractions in both cases, long numbers, and Qwen's
// special and added tokens inside text (whole and broken). All valid UTF-8; only
// characters assigned by Unicode 15.0, so ICU 72 and the JS reference's ICU agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::tokenizer::testing {

/// `count` strings: first every fragment alone, then random mixtures of them.
std::vector<std::string> make_text_corpus(int count, uint64_t seed);

/// The fragments the corpus is built from.
const std::vector<std::string>& corpus_fragments();

}  // namespace ferry::tokenizer::testing
