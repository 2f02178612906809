// The frame codec: round trips, incremental feeding, and malformed input that
// must be refused without a crash or a huge allocation.
#include "protocol/frame.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ferry::protocol {
namespace {

std::string u32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A frame put together by hand (encode_frame() writes only good ones): request id 1,
// any `type`, and a header that need not be JSON.
std::string raw_frame(uint8_t type, const std::string& header, const std::string& body = "") {
  return u32(9 + header.size() + body.size()) + std::string(1, static_cast<char>(type)) + u32(1) + u32(header.size()) +
         header + body;
}

// What a fresh decoder makes of `bytes` fed at once.
Result<std::optional<Frame>> decode(const std::string& bytes) {
  FrameDecoder d;
  d.feed(bytes.data(), bytes.size());
  return d.next();
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

// Reads straight into the decoder, as the agent and the coordinator do: a large
// body lands in its own storage (no copy) and no read runs past its frame.
TEST(FrameTest, LargeBodyIsReadInPlaceAndNoReadSpansTwoFrames) {
  std::string big(300 * 1024 + 17, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + 3);
  std::string bytes = encode_frame(make_reply(7, {{"k", 1}}, big)) + encode_frame(make_reply(8, {{"k", 2}}, "tail"));
  FrameDecoder d;
  std::vector<Frame> frames;
  size_t pos = 0;
  constexpr size_t kRead = 10000;
  bool big_in_place = false;
  while (pos < bytes.size()) {
    auto [dst, room] = d.prepare(kRead);
    ASSERT_GE(room, 1u);
    ASSERT_LE(room, kRead);
    size_t n = std::min(room, bytes.size() - pos);
    std::memcpy(dst, bytes.data() + pos, n);
    d.commit(n);
    pos += n;
    for (;;) {
      auto got = d.next();
      ASSERT_TRUE(got.ok()) << got.status().message();
      if (!got->has_value()) break;
      frames.push_back(std::move(**got));
      // The read that completed the big body ended exactly at its end, inside it.
      if (frames.back().request_id == 7) big_in_place = frames.back().body.data() + big.size() == dst + n;
    }
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].body, big);
  EXPECT_EQ(frames[0].header["k"], 1);
  EXPECT_TRUE(big_in_place);
  EXPECT_EQ(frames[1].request_id, 8u);
  EXPECT_EQ(frames[1].body, "tail");
  EXPECT_EQ(d.buffered(), 0u);
}

TEST(FrameTest, FeedAndInPlaceReadsMix) {
  std::string big(200 * 1024, 'b');
  std::string bytes = encode_frame(make_reply(1, {}, "x")) + encode_frame(make_reply(2, {}, big)) +
                      encode_frame(make_reply(3, {}, big + "c"));
  FrameDecoder d;
  std::vector<Frame> frames;
  size_t pos = 0;
  for (int step = 0; pos < bytes.size(); ++step) {
    size_t n;
    if (step % 2 == 0) {
      n = std::min<size_t>(70000, bytes.size() - pos);
      d.feed(bytes.data() + pos, n);
    } else {
      auto [dst, room] = d.prepare(50000);
      n = std::min(room, bytes.size() - pos);
      std::memcpy(dst, bytes.data() + pos, n);
      d.commit(n);
    }
    pos += n;
    for (;;) {
      auto got = d.next();
      ASSERT_TRUE(got.ok());
      if (!got->has_value()) break;
      frames.push_back(std::move(**got));
    }
  }
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].body, "x");
  EXPECT_EQ(frames[1].body, big);
  EXPECT_EQ(frames[2].body, big + "c");
}

TEST(FrameTest, RefusesOversizedLengthBeforeAllocating) {
  auto got = decode(u32(0xFFFFFFF0u) + std::string(20, 'x'));
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
      {raw_frame(9, ""), "bad frame type"},
      {u32(9) + std::string(1, '\x01') + u32(1) + u32(100), "bad frame header length"},
      {raw_frame(1, hdr), "not a JSON object"},
      {raw_frame(1, "{{{"), "not a JSON object"},
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

// Review F4: a list that grows with the data rode in the 1 MiB header, so a folder
// of ~18k files or a file of ~48 GiB could not be listed, hashed or committed. A
// listing of 100,000 files (the issue's goal) goes in the body, and the reader
// finds it in the header as before.
TEST(FrameTest, AListOfAHundredThousandEntriesRidesInTheBodyAndComesBackInTheHeader) {
  nlohmann::json files = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "shard/f_%06d.txt", i);
    files.push_back({{"path", name}, {"size", i}, {"mode", 0644}, {"mtime_ns", 1764556800123456789 + i},
                     {"ino", 5000000 + i}});
  }
  nlohmann::json header = {{"type", "dir"}, {"files", files}};
  ASSERT_GT(header.dump().size(), kMaxHeaderBytes) << "the case the header cap refused";
  auto body = move_field_to_body(&header, "files", "the listing");
  ASSERT_TRUE(body.ok()) << body.status().message();
  Frame f = make_reply(9, header, *body);
  std::string prefix = encode_frame_prefix(f);
  EXPECT_LE(prefix.size() - 13, kMaxHeaderBytes);
  EXPECT_LT(prefix.size(), 200u) << "only the small fields stay in the header";

  std::string bytes = prefix + f.body;
  FrameDecoder d;
  // In pieces, as from a pipe: the large body is read in place.
  for (size_t at = 0; at < bytes.size(); at += 1 << 16) {
    d.feed(bytes.data() + at, std::min<size_t>(1 << 16, bytes.size() - at));
  }
  auto got = d.next();
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->header["type"], "dir");
  EXPECT_EQ((*got)->header["files"], files);
  EXPECT_FALSE((*got)->header.contains(kBodyField));
  EXPECT_TRUE((*got)->body.empty());
}

// Review N8: a job's command and env, of any size the body holds, ride together
// and come back into the header where the agent reads them.
TEST(FrameTest, SeveralFieldsRideInTheBodyAndComeBackInTheHeader) {
  nlohmann::json env = {{"BIG", std::string(2 << 20, 'v')}, {"SMALL", "s"}};
  std::string command = "cat <<'EOF'\n" + std::string(3 << 20, 'c') + "\nEOF\n";
  nlohmann::json header = {{"op", "job.start"}, {"job", "r.s"}, {"command", command}, {"env", env}};
  auto body = move_fields_to_body(&header, {"command", "env"}, "the command and env of r.s");
  ASSERT_TRUE(body.ok()) << body.status().message();
  Frame f = make_request(3, "job.start", header, *body);
  std::string bytes = encode_frame(f);
  EXPECT_LT(bytes.size() - f.body.size(), 200u) << "only the small fields stay in the header";
  auto got = decode(bytes);
  ASSERT_TRUE(got.ok()) << got.status().message();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->header["command"], command);
  EXPECT_EQ((*got)->header["env"], env);
  EXPECT_EQ((*got)->header["job"], "r.s");
  EXPECT_FALSE((*got)->header.contains(kBodyField));
}

TEST(FrameTest, AHeaderOverItsCapIsRefusedNamingTheOpAndSize) {
  Frame f = make_request(4, "job.start", {{"env", {{"BIG", std::string(2 << 20, 'v')}}}});
  auto prefix = encode_frame_prefix_checked(f);
  ASSERT_FALSE(prefix.ok());
  EXPECT_EQ(prefix.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(prefix.status().message().find("'job.start'"), std::string::npos) << prefix.status().message();
  EXPECT_NE(prefix.status().message().find("2097"), std::string::npos) << prefix.status().message();
}

TEST(FrameTest, AListTooLargeForABodyIsRefusedWithItsName) {
  nlohmann::json header = {{"chunks", std::string(kMaxFrameBytes, 'x')}};
  auto body = move_field_to_body(&header, "chunks", "the chunk hashes of big.bin");
  ASSERT_FALSE(body.ok());
  EXPECT_NE(body.status().message().find("the chunk hashes of big.bin is too large"), std::string::npos)
      << body.status().message();
  EXPECT_TRUE(header.contains("chunks")) << "left as it was";
}

TEST(FrameTest, RefusesABodyFieldThatIsNotJson) {
  std::string hdr = R"({"body_field":"files"})";
  std::string body = "[1,2";
  auto got = decode(raw_frame(2, hdr, body));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("not the JSON of its field 'files'"), std::string::npos)
      << got.status().message();
}

// A body field joins the header, so it is held to the header's depth bound: a deep
// value would otherwise overflow the stack when copied or printed.
TEST(FrameTest, RefusesABodyFieldNestedDeeperThanAHeaderMayBe) {
  std::string hdr = R"({"body_field":"files"})";
  std::string body = std::string(kMaxHeaderDepth + 1, '[') + std::string(kMaxHeaderDepth + 1, ']');
  auto got = decode(raw_frame(2, hdr, body));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("nested deeper than"), std::string::npos) << got.status().message();
}

TEST(FrameTest, ErrorFramesCarryTheStatus) {
  Frame e = make_error(5, failed_precondition("stale attempt token"));
  Status s = status_from_error_frame(e);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "stale attempt token");
}

}  // namespace
}  // namespace ferry::protocol
