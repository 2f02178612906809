// Frame: the unit of the agent wire protocol (docs/DESIGN.md §4), and its codec.
//
// On the wire, little-endian:
//   u32 length      bytes that follow this field
//   u8  type        FrameType
//   u32 request_id  echoed by the reply; 0 for unsolicited frames
//   u32 header_len  bytes of the JSON header
//   header          UTF-8 JSON object (control: "op", arguments, results)
//   body            raw bytes (log text, file chunks); may be empty
// Frames larger than kMaxFrameBytes are refused before any allocation, so a
// corrupt length can never make either side allocate gigabytes.
//
// Plain values and a single-threaded decoder; no I/O here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ferry::protocol {

inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr uint32_t kMaxHeaderBytes = 1u << 20;           // 1 MiB of JSON
inline constexpr uint32_t kMaxFrameBytes = (64u << 20) + kMaxHeaderBytes;  // 64 MiB body
/// Arrays and objects nested deeper than this in a header are refused: nlohmann::json
/// copies and prints values recursively, so a peer's 500,000-deep array would
/// overflow the stack of whoever copies it. Real headers nest 3 or 4 deep.
inline constexpr int kMaxHeaderDepth = 64;

enum class FrameType : uint8_t {
  kRequest = 1,  // coordinator → agent
  kReply = 2,    // agent → coordinator, success
  kError = 3,    // agent → coordinator, header {"code","message"}
  kEvent = 4,    // unsolicited, either way (heartbeats)
};

struct Frame {
  FrameType type = FrameType::kRequest;
  uint32_t request_id = 0;
  nlohmann::json header = nlohmann::json::object();
  std::string body;
};

/// Serializes a frame. Asserts the size limits (our own frames are bugs if too big;
/// lists that grow with the data go to the body: move_field_to_body).
std::string encode_frame(const Frame& frame);
/// Everything of the encoded frame before its body: write this, then frame.body,
/// and a multi-MiB body is never copied.
std::string encode_frame_prefix(const Frame& frame);
/// The same for a frame whose size this side does not control (a request built
/// from the user's values): kInvalidArgument naming the op and the sizes when the
/// header or the whole is over its cap, so that one call fails and not the link.
Result<std::string> encode_frame_prefix_checked(const Frame& frame);

/// Incremental decoder: bytes in, whole frames out. After an error the stream is
/// unusable (the peer must close the connection).
///
/// Two ways in. feed() copies bytes the caller already holds. prepare()/commit()
/// let the caller read straight into the decoder: once a frame's header is in and
/// its body is large (≥ kDirectBodyBytes), prepare() hands out the body's own
/// storage, bounded by the bytes the body still lacks, so a multi-MiB chunk goes
/// from the socket or pipe into Frame::body with no copy and never spans frames.
class FrameDecoder {
 public:
  /// A body at least this large is read in place rather than through the buffer.
  static constexpr size_t kDirectBodyBytes = 64 * 1024;

  void feed(const char* data, size_t n);

  /// Space for the next bytes of the stream: 1..max_bytes bytes at the returned
  /// pointer (at most the rest of the current body while one is read in place).
  /// Valid until the next call on this decoder; follow with commit().
  std::pair<char*, size_t> prepare(size_t max_bytes);
  /// `n` bytes (≤ what prepare() offered) were written there.
  void commit(size_t n);

  /// The next complete frame, std::nullopt if more bytes are needed, or an
  /// error for a malformed frame (bad length, type, header JSON, nesting).
  Result<std::optional<Frame>> next();

  /// Bytes received but not yet returned as frames.
  size_t buffered() const { return (end_ - begin_) + (in_body_ ? body_filled_ : 0); }

 private:
  void reserve_tail(size_t n);

  std::unique_ptr<char[]> buf_;  // [begin_, end_) holds undecoded bytes
  size_t cap_ = 0, begin_ = 0, end_ = 0;
  bool failed_ = false;
  // A frame whose body is being read in place (prepare() points into it).
  bool in_body_ = false;
  Frame body_frame_;
  size_t body_filled_ = 0;
};

/// Lists that grow with the data (a folder's files, a file's chunk hashes) ride
/// in the body as JSON, never in the header, which is capped at kMaxHeaderBytes:
/// a folder of 100,000 files or a file of 64 GiB in 2 MiB chunks needs more. The
/// header's "body_field" names the field; FrameDecoder::next() puts it back into
/// the header, so a reader finds it where a small one would be.
inline constexpr char kBodyField[] = "body_field";
/// Moves header[key] (which must exist) out of the header: returns the body to
/// send with it and sets header["body_field"] = key. Fails with a message naming
/// `what` when the list is larger than a frame's body may be (64 MiB of JSON).
Result<std::string> move_field_to_body(nlohmann::json* header, const std::string& key, const std::string& what);

/// The same for several scalar fields at once (a job's command and env): they ride
/// as one JSON object, and header["body_field"] lists their names.
Result<std::string> move_fields_to_body(nlohmann::json* header, const std::vector<std::string>& keys,
                                        const std::string& what);

/// Convenience builders.
Frame make_request(uint32_t id, const std::string& op, nlohmann::json args = nlohmann::json::object(),
                   std::string body = {});
Frame make_reply(uint32_t id, nlohmann::json result = nlohmann::json::object(), std::string body = {});
Frame make_error(uint32_t id, const Status& status);

/// The Status carried by an error frame (code name + message).
Status status_from_error_frame(const Frame& frame);

/// A call's answer read as `Reply` (a protocol/ops struct): the call's own failure as
/// it came, else the reply read from the frame's header through its field list.
template <typename Reply>
Result<Reply> reply_of(const Result<Frame>& answer) {
  if (!answer.ok()) return answer.status();
  return Reply::from_json(answer->header);
}

}  // namespace ferry::protocol
