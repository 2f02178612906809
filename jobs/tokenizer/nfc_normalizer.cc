#include "jobs/tokenizer/nfc_normalizer.h"

#include <cassert>

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

namespace ferry::tokenizer {
namespace {

const icu::Normalizer2& nfc_instance() {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
  assert(U_SUCCESS(status) && n != nullptr);  // ICU's own data; missing only in a broken install
  return *n;
}

icu::StringPiece piece(std::string_view s) { return icu::StringPiece(s.data(), static_cast<int32_t>(s.size())); }

}  // namespace

bool is_nfc(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  return nfc_instance().isNormalizedUTF8(piece(text), status) && U_SUCCESS(status);
}

std::string nfc(std::string_view text) {
  if (is_nfc(text)) return std::string(text);
  std::string out;
  out.reserve(text.size());
  icu::StringByteSink<std::string> sink(&out);
  UErrorCode status = U_ZERO_ERROR;
  nfc_instance().normalizeUTF8(0, piece(text), sink, nullptr, status);
  assert(U_SUCCESS(status));  // input is valid UTF-8, checked by the caller
  return out;
}

}  // namespace ferry::tokenizer
