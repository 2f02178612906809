// A frame written byte by byte, as protocol/frame.h lays it out, from header text the
// test controls (a header nested deeper than nlohmann::json could dump, a header that
// is not JSON): the peer's bytes, not our encoder's.
#pragma once

#include <cstdint>
#include <string>

namespace ferry::fuzz {

inline void put_le32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

inline std::string wire_frame(uint8_t type, uint32_t request_id, const std::string& header_text,
                              const std::string& body = {}) {
  std::string out;
  put_le32(out, static_cast<uint32_t>(9 + header_text.size() + body.size()));
  out.push_back(static_cast<char>(type));
  put_le32(out, request_id);
  put_le32(out, static_cast<uint32_t>(header_text.size()));
  return out + header_text + body;
}

}  // namespace ferry::fuzz
