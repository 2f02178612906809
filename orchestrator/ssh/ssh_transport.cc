#include "orchestrator/ssh/ssh_transport.h"

#include <chrono>
#include <cstring>

#include "base/file_hash.h"
#include "base/shell_quote.h"
#include "orchestrator/ssh/agent_bootstrap.h"

namespace ferry {

SshTransport::SshTransport(SshTarget target, std::string local_agent_path, std::string remote_command)
    : target_(std::move(target)),
      local_agent_path_(std::move(local_agent_path)),
      remote_command_(std::move(remote_command)) {}

SshTransport::~SshTransport() { close(); }

std::string SshTransport::describe() const {
  if (session_) return session_->describe();
  std::string u = target_.user.empty() ? "" : target_.user + "@";
  return "ssh " + u + target_.address + ":" + std::to_string(target_.port);
}

std::string SshTransport::remote_stderr() const { return channel_ ? channel_->stderr_tail() : std::string(); }

namespace {

constexpr char kAgentReady[] = "FERRY-AGENT-READY\n";
constexpr char kAgentMissing[] = "FERRY-AGENT-MISSING\n";
constexpr int kMarkerTimeoutMs = 30000;

}  // namespace

Status SshTransport::open() {
  close();
  session_ = std::make_unique<SshSession>(target_);
  Status connected = session_->connect();
  nobody_there_ = !connected.ok() && session_->nobody_there();
  if (!connected.ok()) return connected;
  const std::string workdir = target_.workdir.empty() ? "." : target_.workdir;
  if (!remote_command_.empty()) return start_command(remote_command_);

  // The common case costs one exec: start the agent if it is there, else say so.
  auto hash = xxh128_file_hex(local_agent_path_);
  if (!hash.ok()) {
    close();
    return hash.status();
  }
  remote_agent_path_ = ::ferry::remote_agent_path(target_.workdir, *hash);
  std::string serve = shell_quote(remote_agent_path_) + " serve --workdir " + shell_quote(workdir);
  std::string probe = "if [ -x " + shell_quote(remote_agent_path_) + " ]; then printf 'FERRY-AGENT-READY\\n'; exec " +
                      serve + "; else printf 'FERRY-AGENT-MISSING\\n'; fi";
  FERRY_RETURN_IF_ERROR(start_command(probe));
  auto marker = read_marker();
  if (!marker.ok()) {
    close();
    return marker.status();
  }
  if (*marker == kAgentReady) return Status();
  // Missing: install it over the same session, then start it.
  channel_.reset();
  auto path = ensure_remote_agent(*session_, local_agent_path_, target_.workdir, &uploaded_agent_);
  if (!path.ok()) {
    Status s = path.status();
    close();
    return s;
  }
  return start_command(serve);
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

// Reads exactly one marker line, byte by byte, so nothing after it is consumed.
Result<std::string> SshTransport::read_marker() {
  std::string got;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kMarkerTimeoutMs);
  while (got.find('\n') == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) {
      return Status(StatusCode::kDeadlineExceeded, describe() + ": no answer from the agent start command");
    }
    char c;
    auto n = read_some(&c, 1, 100);
    if (!n.ok()) return n.status();
    if (*n == 1) got += c;
    if (got.size() > 64) return internal_error(describe() + ": unexpected output before the agent: " + got);
  }
  if (got != kAgentReady && got != kAgentMissing) {
    return internal_error(describe() + ": unexpected output before the agent: " + got);
  }
  return got;
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
