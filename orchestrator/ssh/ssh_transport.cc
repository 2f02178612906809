#include "orchestrator/ssh/ssh_transport.h"

#include <chrono>
#include <cstring>
#include <optional>

#include "base/file_hash.h"
#include "base/shell_quote.h"
#include "orchestrator/ssh/agent_bootstrap.h"

namespace ferry {

SshTransport::SshTransport(SshTarget target, std::string local_agent_path, std::string remote_command,
                           std::shared_ptr<LaneSocket> lanes, bool data_lane)
    : target_(std::move(target)),
      local_agent_path_(std::move(local_agent_path)),
      remote_command_(std::move(remote_command)),
      lanes_(std::move(lanes)),
      data_lane_(data_lane) {}

SshTransport::~SshTransport() { close(); }

std::string SshTransport::describe() const {
  if (session_) return session_->describe();
  std::string u = target_.user.empty() ? "" : target_.user + "@";
  return "ssh " + u + target_.address + ":" + std::to_string(target_.port);
}

std::string SshTransport::remote_stderr() const { return channel_ ? channel_->stderr_tail() : std::string(); }

namespace {

// The start command prints "FERRY-AGENT-READY <absolute workdir>" before the agent
// takes over the channel, or FERRY-AGENT-MISSING, or kAgentUnsafe (agent_bootstrap.h).
constexpr char kAgentReady[] = "FERRY-AGENT-READY ";
constexpr char kAgentMissing[] = "FERRY-AGENT-MISSING\n";
constexpr int kMarkerTimeoutMs = 30000;
constexpr size_t kMaxMarkerBytes = 8192;
// The lanes socket under the workdir, named after the agent binary so agents of
// different versions never serve each other's lanes.
std::string lanes_socket_rel(const std::string& agent_hash) {
  return ".ferry/run/lanes-" + agent_hash.substr(0, 16) + ".sock";
}

}  // namespace

Status SshTransport::open() {
  close();
  via_lane_socket_ = false;
  session_ = std::make_unique<SshSession>(target_);
  std::optional<LaneSocket::HandshakeTurn> turn;  // a few at a time per host (MaxStartups)
  if (lanes_) turn.emplace(*lanes_);
  Status connected = session_->connect();
  turn.reset();
  nobody_there_ = !connected.ok() && session_->nobody_there();
  if (!connected.ok()) return connected;
  const std::string workdir = target_.workdir.empty() ? "." : target_.workdir;
  if (!remote_command_.empty()) return start_command(remote_command_);
  if (data_lane_ && lanes_ && open_lane_channel()) return Status();
  if (!session_) return unavailable(describe() + ": the link broke while opening a lane");

  // The common case costs one exec: start the agent if it is there, else say so.
  auto hash = xxh128_file_hex(local_agent_path_);
  if (!hash.ok()) {
    close();
    return hash.status();
  }
  remote_agent_path_ = ::ferry::remote_agent_path(target_.workdir, *hash);
  const std::string rel_socket = lanes_socket_rel(*hash);
  // Only the main link listens for lanes; the shell names the absolute path.
  std::string serve = shell_quote(remote_agent_path_) + " serve --workdir " + shell_quote(workdir);
  if (lanes_ && !data_lane_) serve += " --lanes-socket \"$w\"/" + shell_quote(rel_socket);
  std::string probe = agent_dirs_check_command(workdir) + "; if [ -x " + shell_quote(remote_agent_path_) +
                      " ]; then w=$(cd " + shell_quote(workdir) +
                      " && pwd) && printf 'FERRY-AGENT-READY %s\\n' \"$w\" && exec " + serve +
                      "; else printf 'FERRY-AGENT-MISSING\\n'; fi";
  auto marker = run_probe(probe);
  if (!marker.ok()) return marker.status();
  if (*marker == kAgentMissing) {
    // Missing: install it over the same session, then start it the same way.
    channel_.reset();
    auto path = ensure_remote_agent(*session_, local_agent_path_, target_.workdir, &uploaded_agent_);
    if (!path.ok()) {
      Status s = path.status();
      close();
      return s;
    }
    marker = run_probe(probe);
    if (!marker.ok()) return marker.status();
    if (*marker == kAgentMissing) {
      close();
      return internal_error(describe() + ": the agent is missing right after it was installed");
    }
  }
  if (lanes_ && !data_lane_) {
    std::string abs = marker->substr(sizeof(kAgentReady) - 1);
    abs.pop_back();  // the newline
    std::string path = abs + "/" + rel_socket;
    // Too long for a unix socket: the agent did not listen, and lanes exec as before.
    if (!abs.empty() && abs[0] == '/' && path.size() <= 107) lanes_->publish(path);
  }
  return Status();
}

// A data lane on the main agent's lanes socket. False (the session kept, unless
// the link broke) when there is none in time or the server refuses the channel.
bool SshTransport::open_lane_channel() {
  std::string path = lanes_->wait(kLaneSocketWaitMs);
  if (path.empty()) return false;
  auto ch = session_->open_unix_socket(path);
  if (!ch.ok()) {
    if (!session_->connected()) close();
    return false;
  }
  channel_ = std::move(*ch);
  via_lane_socket_ = true;
  return true;
}

Status SshTransport::start_command(const std::string& command) {
  auto ch = session_->open_exec(command);
  if (!ch.ok()) {
    Status s = ch.status();
    close();
    return s;
  }
  channel_ = std::move(*ch);
  return Status();
}

// Starts the probe and reads its marker: the agent is ready or missing. No marker,
// or agent folders that are not safe to use, close the link and are the error.
Result<std::string> SshTransport::run_probe(const std::string& probe) {
  FERRY_RETURN_IF_ERROR(start_command(probe));
  auto marker = read_marker();
  if (!marker.ok()) {
    close();
    return marker.status();
  }
  if (marker->rfind(kAgentUnsafe, 0) == 0) {
    close();
    return agent_dirs_refusal(describe(), *marker);
  }
  return marker;
}

// Reads up to and including the marker line, byte by byte, so nothing after it is
// consumed. What a login rc prints before it (a greeting, a `conda activate` note)
// is skipped: the agent's frames start only after the marker. Too much of it will
// not heal by retrying, so it fails the host with the cause (review F20.6).
Result<std::string> SshTransport::read_marker() {
  std::string line, skipped;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kMarkerTimeoutMs);
  for (;;) {
    if (std::chrono::steady_clock::now() > deadline) {
      return Status(StatusCode::kDeadlineExceeded,
                    describe() + ": no answer from the agent start command" +
                        (skipped.empty() ? "" : " (it printed: " + skipped.substr(0, 256) + ")"));
    }
    char c;
    auto n = read_some(&c, 1, 100);
    if (!n.ok()) return n.status();
    if (*n == 1) line += c;
    if (line.empty() || line.back() != '\n') {
      if (skipped.size() + line.size() > kMaxMarkerBytes) break;
      continue;
    }
    // The rc's last words may lack a newline and share the marker's line.
    for (const char* marker : {kAgentReady, kAgentMissing, kAgentUnsafe}) {
      size_t at = line.find(marker);
      if (at != std::string::npos) return line.substr(at);
    }
    skipped += line;
    line.clear();
    if (skipped.size() > kMaxMarkerBytes) break;
  }
  skipped += line;
  return invalid_argument(
      describe() + ": the login shell printed more than " + std::to_string(kMaxMarkerBytes) +
      " bytes before the agent started (" + skipped.substr(0, 256) +
      "...): make the remote user's shell rc quiet when not interactive (e.g. `[[ $- == *i* ]] || return` "
      "at the top of ~/.bashrc)");
}

Result<size_t> SshTransport::read_some(char* buf, size_t n, int timeout_ms) {
  if (!channel_) return failed_precondition(describe() + ": transport is not open");
  // Straight into the caller's buffer: its size is the window libssh advertises.
  auto got = channel_->read_some(buf, n, timeout_ms);
  if (!got.ok()) return got.status();
  if (*got == 0 && channel_->at_eof()) {
    std::string err = channel_->stderr_tail();
    if (err.size() > 512) err = err.substr(err.size() - 512);
    return unavailable(describe() + ": the remote `" + channel_->command() + "` closed its output" +
                       (err.empty() ? "" : "; stderr: " + err));
  }
  return *got;
}

Status SshTransport::write_all(const char* data, size_t n) {
  if (!channel_) return failed_precondition(describe() + ": transport is not open");
  return channel_->write_all(data, n);
}

void SshTransport::close() {
  if (channel_) {
    if (session_ && !session_->broken()) (void)channel_->send_eof();
    channel_.reset();
  }
  if (session_) {
    session_->disconnect();
    session_.reset();
  }
}

}  // namespace ferry
