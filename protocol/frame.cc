#include "protocol/frame.h"

#include <algorithm>
#include <cstring>

#include "base/peer_json.h"
#include "protocol/body_buffers.h"

namespace ferry::protocol {
namespace {

constexpr size_t kFixedBytes = 1 + 4 + 4;  // type, request_id, header_len

void put_u32(std::string& out, uint32_t v) {
  char b[4] = {static_cast<char>(v & 0xff), static_cast<char>((v >> 8) & 0xff),
               static_cast<char>((v >> 16) & 0xff), static_cast<char>((v >> 24) & 0xff)};
  out.append(b, 4);
}

uint32_t get_u32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t(u[0]) | (uint32_t(u[1]) << 8) | (uint32_t(u[2]) << 16) | (uint32_t(u[3]) << 24);
}

bool valid_type(uint8_t t) { return t >= 1 && t <= 4; }

// A field that rode in the body goes back into the header (move_field_to_body).
Status restore_body_field(Frame* frame) {
  auto it = frame->header.find(kBodyField);
  if (it == frame->header.end()) return Status();
  if (!it->is_string() || it->get<std::string>().empty()) return invalid_argument("frame names a bad body field");
  std::string key = it->get<std::string>();
  // It joins the header, so the header's depth bound is its bound too.
  if (json_nesting_depth(frame->body.data(), frame->body.size()) >= kMaxHeaderDepth) {
    return invalid_argument("frame body field '" + key + "' nested deeper than " + std::to_string(kMaxHeaderDepth) +
                            " levels");
  }
  nlohmann::json value = nlohmann::json::parse(frame->body, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return invalid_argument("frame body is not the JSON of its field '" + key + "'");
  frame->header.erase(it);
  frame->header[key] = std::move(value);
  std::string().swap(frame->body);
  return Status();
}

}  // namespace

std::string encode_frame(const Frame& frame) {
  std::string out = encode_frame_prefix(frame);
  out += frame.body;
  return out;
}

std::string encode_frame_prefix(const Frame& frame) {
  std::string header = frame.header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  assert(header.size() <= kMaxHeaderBytes);
  size_t length = kFixedBytes + header.size() + frame.body.size();
  assert(length <= kMaxFrameBytes);
  std::string out;
  out.reserve(4 + kFixedBytes + header.size());
  put_u32(out, static_cast<uint32_t>(length));
  out.push_back(static_cast<char>(frame.type));
  put_u32(out, frame.request_id);
  put_u32(out, static_cast<uint32_t>(header.size()));
  out += header;
  return out;
}

void FrameDecoder::reserve_tail(size_t n) {
  if (cap_ - end_ >= n) return;
  size_t used = end_ - begin_;
  if (cap_ - used >= n && begin_ > 0) {  // room enough once the consumed bytes are dropped
    std::memmove(buf_.get(), buf_.get() + begin_, used);
  } else {
    size_t want = std::max({cap_ * 2, used + n, kDirectBodyBytes});
    std::unique_ptr<char[]> bigger(new char[want]);
    if (used > 0) std::memcpy(bigger.get(), buf_.get() + begin_, used);
    buf_ = std::move(bigger);
    cap_ = want;
  }
  begin_ = 0;
  end_ = used;
}

std::pair<char*, size_t> FrameDecoder::prepare(size_t max_bytes) {
  max_bytes = std::max<size_t>(max_bytes, 1);
  if (in_body_ && body_filled_ < body_frame_.body.size()) {
    return {&body_frame_.body[body_filled_], std::min(max_bytes, body_frame_.body.size() - body_filled_)};
  }
  // Between bodies: a modest read, so a large body that follows mostly lands in place.
  size_t n = std::min(max_bytes, kDirectBodyBytes);
  if (begin_ == end_) begin_ = end_ = 0;
  reserve_tail(n);
  return {buf_.get() + end_, n};
}

void FrameDecoder::commit(size_t n) {
  if (in_body_ && body_filled_ < body_frame_.body.size()) {
    body_filled_ += n;
  } else {
    end_ += n;
  }
}

void FrameDecoder::feed(const char* data, size_t n) {
  while (n > 0) {
    auto [dst, room] = prepare(n);
    size_t k = std::min(room, n);
    std::memcpy(dst, data, k);
    commit(k);
    data += k;
    n -= k;
  }
}

Result<std::optional<Frame>> FrameDecoder::next() {
  if (failed_) return invalid_argument("frame stream already failed");
  if (in_body_) {
    if (body_filled_ < body_frame_.body.size()) return std::optional<Frame>();
    in_body_ = false;
    body_filled_ = 0;
    std::optional<Frame> out(std::move(body_frame_));
    body_frame_ = Frame();
    if (Status s = restore_body_field(&*out); !s.ok()) {
      failed_ = true;
      return s;
    }
    return out;
  }
  size_t avail = end_ - begin_;
  if (avail < 4) return std::optional<Frame>();
  const char* p = buf_.get() + begin_;
  uint32_t length = get_u32(p);
  if (length < kFixedBytes || length > kMaxFrameBytes) {
    failed_ = true;
    return invalid_argument("bad frame length " + std::to_string(length));
  }
  if (avail < 4 + kFixedBytes) return std::optional<Frame>();
  uint8_t type = static_cast<uint8_t>(p[4]);
  uint32_t request_id = get_u32(p + 5);
  uint32_t header_len = get_u32(p + 9);
  if (!valid_type(type)) {
    failed_ = true;
    return invalid_argument("bad frame type " + std::to_string(type));
  }
  if (header_len > kMaxHeaderBytes || header_len > length - kFixedBytes) {
    failed_ = true;
    return invalid_argument("bad frame header length " + std::to_string(header_len));
  }
  size_t body_len = length - kFixedBytes - header_len;
  bool whole = avail >= 4 + size_t(length);
  // Wait for the whole frame, unless its header is in and its body is worth reading in place.
  if (!whole && (body_len < kDirectBodyBytes || avail < 4 + kFixedBytes + header_len)) {
    return std::optional<Frame>();
  }
  Frame frame;
  frame.type = static_cast<FrameType>(type);
  frame.request_id = request_id;
  const char* header = p + 4 + kFixedBytes;
  if (header_len == 0) {
    frame.header = nlohmann::json::object();
  } else if (json_nesting_depth(header, header_len) > kMaxHeaderDepth) {
    failed_ = true;
    return invalid_argument("frame header nested deeper than " + std::to_string(kMaxHeaderDepth) + " levels");
  } else {
    frame.header = nlohmann::json::parse(header, header + header_len, nullptr, /*allow_exceptions=*/false);
    if (frame.header.is_discarded() || !frame.header.is_object()) {
      failed_ = true;
      return invalid_argument("frame header is not a JSON object");
    }
  }
  if (!whole) {
    // Every buffered byte belongs to this frame: move them into the body and read the rest there.
    size_t have = avail - (4 + kFixedBytes + header_len);
    frame.body = take_body_buffer(body_len);  // every byte of it is overwritten: no zero-fill
    std::memcpy(&frame.body[0], header + header_len, have);
    body_frame_ = std::move(frame);
    body_filled_ = have;
    in_body_ = true;
    begin_ = end_ = 0;
    return std::optional<Frame>();
  }
  frame.body.assign(header + header_len, body_len);
  begin_ += 4 + length;
  if (Status s = restore_body_field(&frame); !s.ok()) {
    failed_ = true;
    return s;
  }
  return std::optional<Frame>(std::move(frame));
}

Result<std::string> move_field_to_body(nlohmann::json* header, const std::string& key, const std::string& what) {
  auto it = header->find(key);
  if (it == header->end()) return invalid_argument("no field '" + key + "' to send in the body");
  std::string body = it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  size_t room = kMaxFrameBytes - kMaxHeaderBytes;
  if (body.size() > room) {
    return failed_precondition(what + " is too large for one message: " + std::to_string(body.size()) +
                               " bytes of JSON, at most " + std::to_string(room));
  }
  header->erase(it);
  (*header)[kBodyField] = key;
  return body;
}

Frame make_request(uint32_t id, const std::string& op, nlohmann::json args, std::string body) {
  Frame f;
  f.type = FrameType::kRequest;
  f.request_id = id;
  f.header = std::move(args);
  if (!f.header.is_object()) f.header = nlohmann::json::object();
  f.header["op"] = op;
  f.body = std::move(body);
  return f;
}

Frame make_reply(uint32_t id, nlohmann::json result, std::string body) {
  Frame f;
  f.type = FrameType::kReply;
  f.request_id = id;
  f.header = result.is_object() ? std::move(result) : nlohmann::json::object();
  f.body = std::move(body);
  return f;
}

Frame make_error(uint32_t id, const Status& status) {
  Frame f;
  f.type = FrameType::kError;
  f.request_id = id;
  f.header = {{"code", static_cast<int>(status.code())}, {"message", status.message()}};
  return f;
}

Status status_from_error_frame(const Frame& frame) {
  // The peer's word: a field of the wrong type is an error to report, never an exception.
  const nlohmann::json& h = frame.header;
  int code = static_cast<int>(StatusCode::kInternal);
  if (h.is_object() && h.contains("code") && h["code"].is_number_integer()) {
    int64_t c = h["code"].get<int64_t>();
    if (c > 0 && c <= static_cast<int>(StatusCode::kInternal)) code = static_cast<int>(c);
  }
  std::string message = "agent error";
  if (h.is_object() && h.contains("message") && h["message"].is_string()) message = h["message"].get<std::string>();
  return Status(static_cast<StatusCode>(code), message);
}

}  // namespace ferry::protocol
