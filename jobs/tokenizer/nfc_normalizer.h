// NFC normalization through ICU (the `NFC` normalizer of tokenizer.json). Any thread:
// ICU's NFC instance is shared and immutable.
#pragma once

#include <string>
#include <string_view>

namespace ferry::tokenizer {

/// NFC of `text` (valid UTF-8). Text already in NFC, the common case, is returned as is
/// after a quick check.
std::string nfc(std::string_view text);

/// Whether `text` is already in NFC.
bool is_nfc(std::string_view text);

}  // namespace ferry::tokenizer
