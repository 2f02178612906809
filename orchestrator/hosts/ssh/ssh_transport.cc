#include "orchestrator/hosts/ssh/ssh_transport.h"

#include <chrono>
#include <cstring>
#include <utility>

#include "base/file_hash.h"
#include "base/shell_quote.h"
#include "orchestrator/hosts/ssh/agent_bootstrap.h"
#include "orchestrator/hosts/ssh/agent_marker.h"

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

// The lanes socket under the workdir, named after the agent binary so agents of
// different versions never serve each other's lanes.
std::string lanes_socket_rel(const std::string& agent_hash) {
  return ".ferry/run/lanes-" + agent_hash.substr(0, 16) + ".sock";
}

// Starts `probe` on a new channel of `session` and reads its marker: the agent is
// ready or missing. No marker, or agent folders that are not safe to use, are the error.
Result<std::pair<std::unique_ptr<SshExecChannel>, std::string>> start_probe(SshSession& session,
                                                                            const std::string& probe) {
  auto ch = session.open_exec(probe);
  if (!ch.ok()) return ch.status();
  auto marker = read_marker(**ch, session.describe());
  if (!marker.ok()) return marker.status();
  if (marker->rfind(kAgentUnsafe, 0) == 0) return agent_dirs_refusal(session.describe(), *marker);
  return std::make_pair(std::move(*ch), std::move(*marker));
}

// A data lane: one more channel of the main link's session, to a fresh agent. One
// started by exec is open once its marker has come (poll_open; review P5).
class SshLane : public AgentTransport {
 public:
  SshLane(SshSession& session, std::unique_ptr<SshExecChannel> channel, std::unique_ptr<AgentMarker> opening = {})
      : session_(session),
        channel_(std::move(channel)),
        opening_(std::move(opening)) {}
  ~SshLane() override { close(); }
  Status open() override { return channel_ ? Status() : failed_precondition(describe() + ": closed"); }
  Result<bool> poll_open() override {
    if (!channel_) return failed_precondition(describe() + ": closed");
    if (!opening_) return true;
    auto found = opening_->advance(*channel_, 0);
    if (found.ok() && !*found) return false;
    Status s = found.ok() ? lane_marker_status(opening_->line()) : found.status();
    opening_.reset();
    if (!s.ok()) {
      close();
      return s;
    }
    return true;
  }
  Result<size_t> read_some(char* buf, size_t n, int timeout_ms) override {
    if (!channel_) return failed_precondition(describe() + ": closed");
    return read_agent_channel(*channel_, describe(), buf, n, timeout_ms);
  }
  Status write_all(const char* data, size_t n) override {
    if (!channel_) return failed_precondition(describe() + ": closed");
    return channel_->write_all(data, n);
  }
  void close() override {
    if (channel_ && !session_.broken()) (void)channel_->send_eof();
    channel_.reset();
  }
  std::string describe() const override {
    return session_.describe() + " lane (" + (channel_ ? channel_->command() : "closed") + ")";
  }
  int poll_fd() const override { return session_.fd(); }

 private:
  // Why a lane's agent did not start: its folders unsafe, or the agent gone.
  Status lane_marker_status(const std::string& marker) const {
    if (marker.rfind(kAgentUnsafe, 0) == 0) return agent_dirs_refusal(session_.describe(), marker);
    if (marker == kAgentMissing) return internal_error(session_.describe() + ": the agent is gone from the host");
    return Status();
  }

  SshSession& session_;  // the main link's; it outlives its lanes
  std::unique_ptr<SshExecChannel> channel_;
  std::unique_ptr<AgentMarker> opening_;  // an exec'd lane's marker, until it has come
};

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
  const std::string rel_socket = lanes_socket_rel(*hash);
  // The shell names the socket's absolute path; lanes started by exec listen for none.
  const std::string serve = shell_quote(remote_agent_path_) + " serve --workdir " + shell_quote(workdir);
  auto probe = [&](const std::string& command) {
    return agent_dirs_check_command(workdir) + "; if [ -x " + shell_quote(remote_agent_path_) + " ]; then w=$(cd " +
           shell_quote(workdir) + " && pwd) && printf 'FERRY-AGENT-READY %s\\n' \"$w\" && exec " + command +
           "; else printf 'FERRY-AGENT-MISSING\\n'; fi";
  };
  const std::string main_probe = probe(serve + " --lanes-socket \"$w\"/" + shell_quote(rel_socket));
  lane_probe_ = probe(serve);
  auto marker = run_probe(main_probe);
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
    marker = run_probe(main_probe);
    if (!marker.ok()) return marker.status();
    if (*marker == kAgentMissing) {
      close();
      return internal_error(describe() + ": the agent is missing right after it was installed");
    }
  }
  std::string abs = marker->substr(sizeof(kAgentReady) - 1);
  abs.pop_back();  // the newline
  std::string path = abs + "/" + rel_socket;
  // Too long for a unix socket: the agent did not listen, and lanes exec as before.
  if (!abs.empty() && abs[0] == '/' && path.size() <= 107) lanes_socket_path_ = path;
  return Status();
}

// The agent's lanes socket when it has one (no login shell runs); else, or when the
// server refuses that channel, another agent by exec on the same session, returned
// while its login shell still runs (SshLane::poll_open).
Result<std::unique_ptr<AgentTransport>> SshTransport::open_lane() {
  if (!session_ || !channel_ || session_->broken()) return unavailable(describe() + ": the link is not open");
  if (lane_probe_.empty()) return failed_precondition(describe() + ": `" + remote_command_ + "` has no lanes");
  if (!lanes_socket_path_.empty()) {
    auto ch = session_->open_unix_socket(lanes_socket_path_);
    if (ch.ok()) return std::unique_ptr<AgentTransport>(std::make_unique<SshLane>(*session_, std::move(*ch)));
    if (!session_->connected() || session_->broken()) return ch.status();
  }
  // The login shell runs before the agent: the lane opens as its marker arrives.
  auto ch = session_->open_exec(lane_probe_);
  if (!ch.ok()) return ch.status();
  return std::unique_ptr<AgentTransport>(
      std::make_unique<SshLane>(*session_, std::move(*ch), std::make_unique<AgentMarker>(describe())));
}

int SshTransport::poll_fd() const { return session_ ? session_->fd() : -1; }

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

// Starts the probe on the main channel and reads its marker; a failure closes the link.
Result<std::string> SshTransport::run_probe(const std::string& probe) {
  auto started = start_probe(*session_, probe);
  if (!started.ok()) {
    Status s = started.status();
    close();
    return s;
  }
  channel_ = std::move(started->first);
  return std::move(started->second);
}

Result<size_t> SshTransport::read_some(char* buf, size_t n, int timeout_ms) {
  if (!channel_) return failed_precondition(describe() + ": transport is not open");
  return read_agent_channel(*channel_, describe(), buf, n, timeout_ms);
}

Status SshTransport::write_all(const char* data, size_t n) {
  if (!channel_) return failed_precondition(describe() + ": transport is not open");
  return channel_->write_all(data, n);
}

void SshTransport::close() {
  lanes_socket_path_.clear();
  lane_probe_.clear();
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
