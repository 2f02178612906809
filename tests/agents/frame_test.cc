// The frame codec: round trips, incremental feeding, and malformed input that
// must be refused without a crash or a huge allocation.
#include "agents/protocol/frame.h"

#include <gtest/gtest.h>

namespace ferry::protocol {
namespace {

std::string u32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

TEST(FrameTest, RoundTripsHeaderAndBinaryBody) {
  std::string body("\0\1\2binary\xff", 10);
  Frame f = make_request(42, "log.read", {{"offset", 7}}, body);
  FrameDecoder d;
  std::string bytes = encode_frame(f);
  d.feed(bytes.data(), bytes.size());
  auto got = d.next();
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->type, FrameType::kRequest);
  EXPECT_EQ((*got)->request_id, 42u);
  EXPECT_EQ((*got)->header["op"], "log.read");
  EXPECT_EQ((*got)->header["offset"], 7);
  EXPECT_EQ((*got)->body, body);
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(FrameTest, DecodesFramesFedOneByteAtATime) {
  std::string bytes = encode_frame(make_reply(1, {{"a", 1}})) + encode_frame(make_reply(2, {{"b", 2}}, "xyz"));
  FrameDecoder d;
  std::vector<Frame> frames;
  for (char c : bytes) {
    d.feed(&c, 1);
    auto got = d.next();
    ASSERT_TRUE(got.ok());
    if (got->has_value()) frames.push_back(**got);
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].request_id, 1u);
  EXPECT_EQ(frames[1].body, "xyz");
}

TEST(FrameTest, RefusesOversizedLengthBeforeAllocating) {
  FrameDecoder d;
  std::string bytes = u32(0xFFFFFFF0u) + std::string(20, 'x');
  d.feed(bytes.data(), bytes.size());
  auto got = d.next();
  EXPECT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("bad frame length"), std::string::npos);
}

TEST(FrameTest, RefusesUnknownTypeBadHeaderLengthAndNonObjectHeader) {
  struct Case {
    std::string bytes;
    std::string expect;
  };
  std::string hdr = "[1,2]";
  std::vector<Case> cases = {
      {u32(9) + std::string(1, '\x09') + u32(1) + u32(0), "bad frame type"},
      {u32(9) + std::string(1, '\x01') + u32(1) + u32(100), "bad frame header length"},
      {u32(9 + hdr.size()) + std::string(1, '\x01') + u32(1) + u32(hdr.size()) + hdr, "not a JSON object"},
      {u32(9 + 3) + std::string(1, '\x01') + u32(1) + u32(3) + "{{{", "not a JSON object"},
      {u32(3) + "abc", "bad frame length"},
  };
  for (const auto& c : cases) {
    FrameDecoder d;
    d.feed(c.bytes.data(), c.bytes.size());
    auto got = d.next();
    ASSERT_FALSE(got.ok()) << c.expect;
    EXPECT_NE(got.status().message().find(c.expect), std::string::npos) << got.status().message();
    EXPECT_FALSE(d.next().ok());  // stays failed
  }
}

TEST(FrameTest, ErrorFramesCarryTheStatus) {
  Frame e = make_error(5, failed_precondition("stale attempt token"));
  Status s = status_from_error_frame(e);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "stale attempt token");
}

}  // namespace
}  // namespace ferry::protocol
