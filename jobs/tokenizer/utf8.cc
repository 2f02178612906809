#include "jobs/tokenizer/utf8.h"

namespace ferry::tokenizer {

std::optional<char32_t> utf8_next(std::string_view s, size_t* pos) {
  size_t i = *pos;
  if (i >= s.size()) return std::nullopt;
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    *pos = i + 1;
    return b0;
  }
  int len;
  char32_t cp;
  char32_t min;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return std::nullopt;
  }
  if (i + len > s.size()) return std::nullopt;
  for (int k = 1; k < len; ++k) {
    unsigned char b = byte(i + k);
    if ((b & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return std::nullopt;
  *pos = i + len;
  return cp;
}

std::optional<size_t> utf8_invalid_offset(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII runs dominate prompts: skip them without decoding.
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    if (!utf8_next(s, &i)) return i;
  }
  return std::nullopt;
}

std::string utf8_encode(char32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return out;
}

std::string utf8_lossy(std::string_view s) {
  // One U+FFFD per maximal subpart of an ill-formed sequence (Unicode's recommended
  // practice, which Rust's from_utf8_lossy and the WHATWG decoder both follow).
  std::string out;
  out.reserve(s.size());
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    if (utf8_next(s, &i)) {
      out.append(s.substr(start, i - start));
      continue;
    }
    unsigned char b0 = byte(start);
    int need;            // continuation bytes a well-formed sequence would have
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      need = 1;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      need = 2;
      if (b0 == 0xE0) lo = 0xA0;
      if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      need = 3;
      if (b0 == 0xF0) lo = 0x90;
      if (b0 == 0xF4) hi = 0x8F;
    } else {
      need = 0;  // never a lead byte
    }
    i = start + 1;
    for (int k = 0; k < need && i < s.size(); ++k, ++i) {
      unsigned char b = byte(i);
      if (k == 0 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) break;
    }
    out += "\xEF\xBF\xBD";  // U+FFFD
  }
  return out;
}

std::string utf8_shown(std::string_view s) {
  constexpr size_t kShownBytes = 80;
  return s.size() > kShownBytes ? utf8_lossy(s.substr(0, kShownBytes)) + "..." : utf8_lossy(s);
}

}  // namespace ferry::tokenizer
