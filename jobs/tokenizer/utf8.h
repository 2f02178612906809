// Small UTF-8 helpers the tokenizer needs around ICU: validation with the offending
// offset, one code point at a time, and a lossy repair for decoded model output
// (a response may end inside a character). Plain functions; any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::tokenizer {

/// Byte offset of the first byte that is not valid UTF-8 (overlong forms, surrogates and
/// code points past U+10FFFF are invalid); nullopt when all of `s` is valid.
std::optional<size_t> utf8_invalid_offset(std::string_view s);

/// Decodes the code point at *pos and advances past it; nullopt (pos unchanged) if invalid.
std::optional<char32_t> utf8_next(std::string_view s, size_t* pos);

std::string utf8_encode(char32_t cp);

/// `s` with each invalid sequence replaced by U+FFFD, as Hugging Face's decode does.
std::string utf8_lossy(std::string_view s);

/// The start of `s` for an error message: its first 80 bytes, made valid, and "..." when
/// cut (a string from a file may be megabytes).
std::string utf8_shown(std::string_view s);

}  // namespace ferry::tokenizer
