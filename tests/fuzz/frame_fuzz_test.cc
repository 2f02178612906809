// The frame decoder on mutated byte streams: every stream ends in frames, a wait for
// more bytes, or an error that sticks; never a crash, a hang or an unbounded allocation.
#include <gtest/gtest.h>

#include <cstring>

#include "protocol/frame.h"
#include "tests/fuzz/fuzz_rounds.h"
#include "tests/fuzz/random_input.h"
#include "tests/fuzz/wire_frame.h"

namespace ferry::fuzz {
namespace {

using protocol::Frame;
using protocol::FrameDecoder;

std::vector<std::string> frame_seeds() {
  std::string big(70 * 1024, 'b');  // above kDirectBodyBytes: read in place
  return {
      protocol::encode_frame(protocol::make_request(0, "hello")),
      protocol::encode_frame(protocol::make_request(7, "recv.write", {{"dest", "d/x"}, {"index", 3}, {"chunk_size", 4}},
                                                    "abcd")),
      protocol::encode_frame(protocol::make_reply(9, {{"chunks", {{"0", "aa"}, {"1", "bb"}}}}, big)),
      protocol::encode_frame(protocol::make_error(5, not_found("no such file"))),
      wire_frame(4, 0, R"({"event":"heartbeat","now_ms":1})"),
      wire_frame(2, 3, ""),
      wire_frame(3, 0, R"({"code":"x","message":7})"),
      wire_frame(2, 0, "{\"protocol\":" + std::string(1000, '[') + std::string(1000, ']') + "}"),
  };
}

// Feeds `bytes` in random slices, through feed() and through prepare()/commit(),
// taking frames as they complete. Returns the frames; *failed when the stream failed.
std::vector<Frame> decode_all(Mutator& m, const std::string& bytes, bool* failed) {
  FrameDecoder d;
  std::vector<Frame> frames;
  *failed = false;
  size_t pos = 0;
  while (pos < bytes.size() && !*failed) {
    size_t want = 1 + m.below(m.chance(50) ? 16 : 200000);
    if (m.chance(50)) {
      size_t n = std::min(want, bytes.size() - pos);
      d.feed(bytes.data() + pos, n);
      pos += n;
    } else {
      auto [dst, room] = d.prepare(want);
      EXPECT_GE(room, 1u);
      size_t n = std::min(room, bytes.size() - pos);
      std::memcpy(dst, bytes.data() + pos, n);
      d.commit(n);
      pos += n;
    }
    EXPECT_LE(d.buffered(), bytes.size());
    for (;;) {
      auto next = d.next();
      if (!next.ok()) {
        *failed = true;
        EXPECT_FALSE(d.next().ok()) << "a failed stream must stay failed";
        break;
      }
      if (!next->has_value()) break;
      frames.push_back(std::move(**next));
    }
  }
  return frames;
}

TEST(FrameFuzzTest, MutatedStreamsDecodeOrFailCleanly) {
  const std::vector<std::string> seeds = frame_seeds();
  FuzzPlan plan = fuzz_plan(4000);
  int decoded = 0, failed_streams = 0;
  for_each_round(plan, "FrameFuzzTest", [&](Mutator& m, int) {
    std::string stream;
    for (size_t k = 1 + m.below(3); k-- > 0;) stream += seeds[m.below(seeds.size())];
    stream = m.mutate_bytes(stream, seeds);
    bool failed = false;
    for (const Frame& f : decode_all(m, stream, &failed)) {
      ++decoded;
      EXPECT_GE(static_cast<int>(f.type), 1);
      EXPECT_LE(static_cast<int>(f.type), 4);
      EXPECT_TRUE(f.header.is_object());
      EXPECT_LE(f.body.size(), protocol::kMaxFrameBytes);
      // What the coordinator and the push make of any frame: never an exception.
      Status s = protocol::status_from_error_frame(f);
      EXPECT_FALSE(s.ok());
    }
    failed_streams += failed;
  });
  // The mix must reach both ends, or the mutations are too weak or too strong to tell.
  expect_outcomes(
      plan, "frames",
      {{"decoded", decoded, 100}, {"streams refused", failed_streams, 100}, {"rounds", plan.end - plan.first}});
}

// A header nested far deeper than any the protocol uses is refused by the decoder:
// copying or printing such a value (nlohmann::json recurses) would overflow the stack.
TEST(FrameFuzzTest, AHeaderNestedTooDeepIsRefused) {
  const int depth = 200000;
  std::string deep = wire_frame(2, 1, "{\"protocol\":" + std::string(depth, '[') + std::string(depth, ']') + "}");
  FrameDecoder d;
  d.feed(deep.data(), deep.size());
  auto next = d.next();
  ASSERT_FALSE(next.ok());
  EXPECT_NE(next.status().message().find("nested"), std::string::npos) << next.status().message();
  // Ordinary nesting still passes.
  std::string fine = wire_frame(2, 1, R"({"a":{"b":[[1,2],[3]],"c":{"d":{}}}})");
  FrameDecoder d2;
  d2.feed(fine.data(), fine.size());
  auto ok = d2.next();
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_TRUE(ok->has_value());
}

}  // namespace
}  // namespace ferry::fuzz
