// The GPT-2 byte-level alphabet: every byte 0..255 has a printable Unicode stand-in, so a
// byte-level BPE vocabulary stores its tokens as text ("Ġthe" is " the"). Plain functions
// over constant tables; any thread.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::tokenizer {

/// The UTF-8 of the stand-in character for each byte.
const std::array<std::string, 256>& byte_level_alphabet();

/// Maps a vocabulary string back to the bytes it stands for; nullopt when a character of
/// `piece` is not in the byte-level alphabet.
std::optional<std::string> byte_level_decode(std::string_view piece);

}  // namespace ferry::tokenizer
