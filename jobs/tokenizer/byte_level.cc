#include "jobs/tokenizer/byte_level.h"

#include <cstdint>

#include "jobs/tokenizer/utf8.h"

namespace ferry::tokenizer {
namespace {

// GPT-2's table: printable Latin-1 bytes stand for themselves; the rest (controls, space,
// DEL, NBSP, soft hyphen) are shifted to U+0100 and up, in byte order.
std::array<char32_t, 256> make_code_points() {
  std::array<char32_t, 256> cps{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    cps[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return cps;
}

}  // namespace

const std::array<std::string, 256>& byte_level_alphabet() {
  static const std::array<std::string, 256> alphabet = [] {
    std::array<std::string, 256> a;
    auto cps = make_code_points();
    for (int b = 0; b < 256; ++b) a[b] = utf8_encode(cps[b]);
    return a;
  }();
  return alphabet;
}

std::optional<std::string> byte_level_decode(std::string_view piece) {
  // Every stand-in is below U+0144: a flat table (-1 = not in the alphabet).
  static const std::array<int16_t, 0x144> inverse = [] {
    std::array<int16_t, 0x144> m;
    m.fill(-1);
    auto cps = make_code_points();
    for (int b = 0; b < 256; ++b) m[cps[b]] = static_cast<int16_t>(b);
    return m;
  }();
  std::string out;
  out.reserve(piece.size());
  size_t i = 0;
  while (i < piece.size()) {
    auto cp = utf8_next(piece, &i);
    if (!cp) return std::nullopt;
    if (*cp >= inverse.size() || inverse[*cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(inverse[*cp]));
  }
  return out;
}

}  // namespace ferry::tokenizer
