#include "agents/agent_peer.h"

#include "base/clock.h"

namespace ferry {
namespace {

constexpr size_t kDiagnosisLines = 3;
constexpr int kCloseGraceMs = 2000;
/// A login rc that prints more than this before the agent starts is a setup to fix,
/// not a greeting to skip.
constexpr size_t kMaxBeforeMarkerBytes = 64 * 1024;

}  // namespace

Result<std::unique_ptr<AgentPeer>> AgentPeer::start(const std::vector<std::string>& argv, int hello_timeout_ms,
                                                    const std::string& ready_marker) {
  ChildProcess::Options options;
  options.capture_stderr = true;
  auto child = ChildProcess::spawn(argv, options);
  if (!child.ok()) return child.status();
  std::unique_ptr<AgentPeer> peer(new AgentPeer(std::move(child).value()));
  FERRY_RETURN_IF_ERROR(peer->send("hello", nlohmann::json::object(), {}, hello_timeout_ms));
  if (!ready_marker.empty()) FERRY_RETURN_IF_ERROR(peer->skip_to_marker(ready_marker, hello_timeout_ms));
  auto hello = peer->receive(hello_timeout_ms);
  if (!hello.ok()) return hello.status();
  if (hello->type == protocol::FrameType::kError) return protocol::status_from_error_frame(*hello);
  uint32_t version = hello->header.value("protocol", 0u);
  if (version != protocol::kProtocolVersion) {
    return failed_precondition("the agent there speaks protocol " + std::to_string(version) + ", this one " +
                               std::to_string(protocol::kProtocolVersion));
  }
  peer->hello_ = hello->header;
  return peer;
}

std::string AgentPeer::diagnosis() {
  if (!child_) return "";
  std::string err = child_->stderr_tail();
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < err.size()) {
    size_t end = err.find('\n', pos);
    if (end == std::string::npos) end = err.size();
    std::string line = err.substr(pos, end - pos);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) lines.push_back(line);
    pos = end + 1;
  }
  std::string out;
  size_t first = lines.size() > kDiagnosisLines ? lines.size() - kDiagnosisLines : 0;
  for (size_t i = first; i < lines.size(); ++i) out += (out.empty() ? "" : "; ") + lines[i];
  return out;
}

Status AgentPeer::broken(const std::string& what) {
  // The command is gone or stuck: end it first, so its last words are on stderr.
  if (child_) child_->finish(kCloseGraceMs);
  std::string why = diagnosis();
  return unavailable(what + (why.empty() ? "" : ": " + why));
}

// Reads stdout up to the end of the line that holds `marker`; the bytes after it are
// the agent's first frames. The rc's last words may lack a newline and share the line.
Status AgentPeer::skip_to_marker(const std::string& marker, int timeout_ms) {
  std::string seen;
  int64_t deadline = mono_ms() + timeout_ms;
  for (;;) {
    size_t at = seen.find(marker);
    size_t eol = at == std::string::npos ? std::string::npos : seen.find('\n', at);
    if (eol != std::string::npos) {
      decoder_.feed(seen.data() + eol + 1, seen.size() - eol - 1);
      return Status();
    }
    if (seen.size() > kMaxBeforeMarkerBytes) {
      if (child_) child_->finish(kCloseGraceMs);
      return invalid_argument("the remote login shell printed more than " + std::to_string(kMaxBeforeMarkerBytes) +
                              " bytes before the agent started (" + seen.substr(0, 256) +
                              "...): make its rc quiet when not interactive (e.g. `[[ $- == *i* ]] || return` at the "
                              "top of ~/.bashrc)");
    }
    int64_t left = deadline - mono_ms();
    if (left <= 0)
      return broken("no answer from the agent start command in " + std::to_string(timeout_ms / 1000) + " s");
    auto got = child_->read_some(buf_.data(), buf_.size(), static_cast<int>(std::min<int64_t>(left, 1000)));
    if (!got.ok()) return broken("the link to the agent closed before it started");
    seen.append(buf_.data(), *got);
  }
}

Status AgentPeer::send(const std::string& op, const nlohmann::json& args, std::string body, int timeout_ms) {
  if (!child_) return unavailable("closed");
  protocol::Frame f;
  f.type = protocol::FrameType::kRequest;
  f.request_id = next_id_++;
  f.header = args;
  f.header["op"] = op;
  f.body = std::move(body);  // the prefix counts it; it is written as is, never copied
  auto prefix = protocol::encode_frame_prefix_checked(f);
  if (!prefix.ok()) return prefix.status();
  Status s = child_->write_all(prefix->data(), prefix->size(), timeout_ms);
  if (s.ok() && !f.body.empty()) s = child_->write_all(f.body.data(), f.body.size(), timeout_ms);
  if (!s.ok()) return broken("the link to the agent broke (" + s.message() + ")");
  return Status();
}

Result<protocol::Frame> AgentPeer::receive(int timeout_ms) {
  if (!child_) return unavailable("closed");
  int64_t deadline = mono_ms() + timeout_ms;
  for (;;) {
    auto next = decoder_.next();
    if (!next.ok()) return broken("bad frame from the agent: " + next.status().message());
    if (next->has_value()) {
      protocol::Frame f = std::move(**next);
      if (f.type == protocol::FrameType::kEvent) continue;  // heartbeats
      return f;
    }
    int64_t left = deadline - mono_ms();
    if (left <= 0) return broken("no answer from the agent in " + std::to_string(timeout_ms / 1000) + " s");
    auto got = child_->read_some(buf_.data(), buf_.size(), static_cast<int>(std::min<int64_t>(left, 1000)));
    if (!got.ok()) return broken("the link to the agent closed");
    decoder_.feed(buf_.data(), *got);
  }
}

Result<protocol::Frame> AgentPeer::call(const std::string& op, const nlohmann::json& args, int timeout_ms,
                                        std::string body) {
  FERRY_RETURN_IF_ERROR(send(op, args, std::move(body), timeout_ms));
  auto r = receive(timeout_ms);
  if (!r.ok()) return r.status();
  if (r->type == protocol::FrameType::kError) return protocol::status_from_error_frame(*r);
  return r;
}

void AgentPeer::close() {
  if (child_) child_->finish(kCloseGraceMs);
}

}  // namespace ferry
