#include "jobs/tokenizer/regex_splitter.h"

#include <cstdint>

#include <unicode/regex.h>
#include <unicode/unistr.h>
#include <unicode/utf16.h>

#include "jobs/tokenizer/utf8.h"

namespace ferry::tokenizer {
namespace {

// ICU counts match time in steps of ten thousand engine operations (0.2 ms each here),
// from the matcher's last reset; each match starts with one (find(from)), so this is per
// match: about a second, far past a real pre-tokenizer's need (a match is one word; 8 MB
// of text splits in 1 s in all) and short of a backtracking blow-up's hours.
constexpr int32_t kMatchTimeLimit = 5000;
// The backtracking stack (heap, not the thread's stack): ICU's default, made explicit.
constexpr int32_t kMatchStackBytes = 8 << 20;

}  // namespace

struct RegexSplitter::Impl {
  std::unique_ptr<icu::RegexPattern> pattern;
  std::unique_ptr<icu::RegexMatcher> matcher;
  icu::UnicodeString utf16;  // the text being split; kept to reuse its buffer
};

std::string oniguruma_to_icu(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      char n = pattern[i + 1];
      if (n == 's') {
        out += "\\p{White_Space}";
      } else if (n == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += c;
        out += n;
      }
      ++i;  // an escape is two characters: never rewrite the second one
      continue;
    }
    out += c;
  }
  return out;
}

RegexSplitter::RegexSplitter(std::unique_ptr<Impl> impl, std::string icu_pattern, SplitBehavior behavior)
    : impl_(std::move(impl)), icu_pattern_(std::move(icu_pattern)), behavior_(behavior) {}

RegexSplitter::~RegexSplitter() = default;

Result<std::unique_ptr<RegexSplitter>> RegexSplitter::create(const std::string& pattern, bool literal,
                                                             SplitBehavior behavior) {
  std::string icu_pattern = literal ? pattern : oniguruma_to_icu(pattern);
  UErrorCode status = U_ZERO_ERROR;
  UParseError parse_error{};
  auto impl = std::make_unique<Impl>();
  impl->pattern.reset(icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(icu_pattern),
                                                 literal ? UREGEX_LITERAL : 0, parse_error, status));
  if (U_FAILURE(status)) {
    return invalid_argument("split regex '" + utf8_shown(pattern) + "': " + u_errorName(status) + " at offset " +
                            std::to_string(parse_error.offset));
  }
  impl->matcher.reset(impl->pattern->matcher(status));
  if (U_SUCCESS(status)) impl->matcher->setTimeLimit(kMatchTimeLimit, status);
  if (U_SUCCESS(status)) impl->matcher->setStackLimit(kMatchStackBytes, status);
  if (U_FAILURE(status)) return invalid_argument("split regex '" + utf8_shown(pattern) + "': " + u_errorName(status));
  return std::unique_ptr<RegexSplitter>(new RegexSplitter(std::move(impl), icu_pattern, behavior));
}

Status RegexSplitter::split(std::string_view text, std::vector<std::string_view>* out) {
  // ICU matches fastest over UTF-16; match offsets are mapped back to UTF-8 by walking
  // both encodings forward together (matches come in increasing order).
  if (text.size() > static_cast<size_t>(INT32_MAX)) {
    return invalid_argument("text of " + std::to_string(text.size()) + " bytes is past the 2 GiB a split can take");
  }
  icu::UnicodeString& u = impl_->utf16;
  u = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  const char16_t* units = u.getBuffer();
  int32_t u16_pos = 0;
  size_t u8_pos = 0;
  auto advance_to = [&](int32_t target) {
    while (u16_pos < target) {
      char16_t c = units[u16_pos];
      if (c < 0x80) {
        u8_pos += 1;
      } else if (c < 0x800) {
        u8_pos += 2;
      } else if (c >= 0xD800 && c <= 0xDFFF) {
        u8_pos += 2;  // each half of a surrogate pair: 4 bytes in all
      } else {
        u8_pos += 3;
      }
      ++u16_pos;
    }
  };
  UErrorCode status = U_ZERO_ERROR;
  icu::RegexMatcher& m = *impl_->matcher;
  m.reset(u);
  const size_t first = out->size();
  const int32_t length16 = u.length();
  size_t last_end = 0;
  int32_t from = 0;
  // find(from) resets the matcher, and with it ICU's time count: find() would count
  // across all the matches of the text and time out on a long one.
  while (from <= length16 && m.find(from, status)) {
    int32_t s16 = m.start(status);
    int32_t e16 = m.end(status);
    if (U_FAILURE(status)) break;
    // Past an empty match by one code point, as find() does.
    from = e16 > s16 ? e16 : e16 + (e16 + 1 < length16 && U16_IS_LEAD(units[e16]) ? 2 : 1);
    advance_to(s16);
    size_t s8 = u8_pos;
    advance_to(e16);
    size_t e8 = u8_pos;
    if (s8 > last_end) out->push_back(text.substr(last_end, s8 - last_end));
    if (behavior_ == SplitBehavior::kIsolated && e8 > s8) out->push_back(text.substr(s8, e8 - s8));
    last_end = e8;
  }
  if (U_FAILURE(status)) {  // U_REGEX_TIME_OUT, U_REGEX_STACK_OVERFLOW: not the end of the text
    out->resize(first);
    return invalid_argument("split regex '" + utf8_shown(icu_pattern_) + "': " + u_errorName(status) + " after byte " +
                            std::to_string(u8_pos) + " of " + std::to_string(text.size()));
  }
  if (last_end < text.size()) out->push_back(text.substr(last_end));
  return Status();
}

}  // namespace ferry::tokenizer
