// Recycled chunk bodies: a body handed back is handed out again (same storage, no
// new allocation), and a frame decoded into it holds exactly its own bytes.
// The pool is process-wide: each test uses sizes no earlier test recycled, and
// asks for just under them, so no other idle body can be the one handed out.
#include "protocol/body_buffers.h"

#include <gtest/gtest.h>

#include <cstring>

#include "protocol/frame.h"

namespace ferry::protocol {
namespace {

TEST(BodyBuffersTest, ARecycledBodyIsHandedOutAgainAtTheAskedSize) {
  constexpr size_t kSize = (5u << 20) + 11;
  std::string body = take_body_buffer(kSize);
  ASSERT_EQ(body.size(), kSize);
  const char* storage = body.data();
  recycle_body_buffer(std::move(body));
  std::string again = take_body_buffer(kSize - 100);
  EXPECT_EQ(again.size(), kSize - 100);
  EXPECT_EQ(again.data(), storage);
  // A size no idle body can hold is a fresh body.
  std::string bigger = take_body_buffer(kSize + (1u << 20));
  EXPECT_EQ(bigger.size(), kSize + (1u << 20));
  EXPECT_NE(bigger.data(), storage);
}

TEST(BodyBuffersTest, SmallBodiesAreFreedAndIdleOnesAreBounded) {
  size_t idle = idle_body_buffers();
  recycle_body_buffer(take_body_buffer(kRecycledBodyMinBytes / 2));
  EXPECT_EQ(idle_body_buffers(), idle);
  for (size_t i = 0; i < kRecycledBodiesMax + 2; ++i) recycle_body_buffer(std::string(kRecycledBodyMinBytes, 'x'));
  EXPECT_EQ(idle_body_buffers(), kRecycledBodiesMax);
  // Taken back out, so the pool is empty again for the tests that follow.
  for (size_t i = 0; i < kRecycledBodiesMax; ++i) (void)take_body_buffer(kRecycledBodyMinBytes);
  EXPECT_EQ(idle_body_buffers(), 0u);
}

// Decodes one frame with a large body through prepare()/commit(), as the links do.
Frame decode_in_place(const std::string& bytes) {
  FrameDecoder d;
  size_t pos = 0;
  while (pos < bytes.size()) {
    auto [dst, room] = d.prepare(64 * 1024);
    size_t n = std::min(room, bytes.size() - pos);
    std::memcpy(dst, bytes.data() + pos, n);
    d.commit(n);
    pos += n;
    auto got = d.next();
    EXPECT_TRUE(got.ok());
    if (got.ok() && got->has_value()) return std::move(**got);
  }
  ADD_FAILURE() << "no frame decoded";
  return Frame();
}

TEST(BodyBuffersTest, AFrameDecodedIntoARecycledBodyHoldsOnlyItsOwnBytes) {
  constexpr size_t kFirst = (6u << 20) + 5;
  Frame first = decode_in_place(encode_frame(make_reply(1, {}, std::string(kFirst, 'a'))));
  ASSERT_EQ(first.body.size(), kFirst);
  const char* storage = first.body.data();
  recycle_body_buffer(std::move(first.body));

  std::string pattern(kFirst - 1000, '\0');
  for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<char>(i * 13 + 1);
  Frame second = decode_in_place(encode_frame(make_reply(2, {}, pattern)));
  EXPECT_EQ(second.body.data(), storage);  // the first frame's storage, reused
  EXPECT_EQ(second.body.size(), pattern.size());
  EXPECT_TRUE(second.body == pattern) << "stale bytes of the first body in the second";
}

}  // namespace
}  // namespace ferry::protocol
