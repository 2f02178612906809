#include "orchestrator/hosts/ssh/agent_marker.h"

#include <utility>

#include "orchestrator/hosts/ssh/agent_bootstrap.h"

namespace ferry {

Result<size_t> read_agent_channel(SshExecChannel& ch, const std::string& who, char* buf, size_t n, int timeout_ms) {
  // Straight into the caller's buffer: its size is the window libssh advertises.
  auto got = ch.read_some(buf, n, timeout_ms);
  if (!got.ok()) return got.status();
  if (*got == 0 && ch.at_eof()) {
    std::string err = ch.stderr_tail();
    if (err.size() > 512) err = err.substr(err.size() - 512);
    return unavailable(who + ": the remote `" + ch.command() + "` closed its output" +
                       (err.empty() ? "" : "; stderr: " + err));
  }
  return *got;
}

AgentMarker::AgentMarker(std::string who)
    : who_(std::move(who)),
      deadline_(std::chrono::steady_clock::now() + std::chrono::milliseconds(kMarkerTimeoutMs)) {}

Result<bool> AgentMarker::advance(SshExecChannel& ch, int wait_ms) {
  if (!marker_.empty()) return true;
  for (int wait = wait_ms;; wait = 0) {
    if (std::chrono::steady_clock::now() > deadline_) {
      return Status(StatusCode::kDeadlineExceeded,
                    who_ + ": no answer from the agent start command" +
                        (skipped_.empty() ? "" : " (it printed: " + skipped_.substr(0, 256) + ")"));
    }
    char c;
    auto n = read_agent_channel(ch, who_, &c, 1, wait);
    if (!n.ok()) return n.status();
    if (*n == 0) return false;  // all that has arrived is read
    line_ += c;
    if (c != '\n') {
      if (skipped_.size() + line_.size() > kMaxMarkerBytes) return too_chatty();
      continue;
    }
    // The rc's last words may lack a newline and share the marker's line.
    for (const char* marker : {kAgentReady, kAgentMissing, kAgentUnsafe}) {
      size_t at = line_.find(marker);
      if (at == std::string::npos) continue;
      marker_ = line_.substr(at);
      return true;
    }
    skipped_ += line_;
    line_.clear();
    if (skipped_.size() > kMaxMarkerBytes) return too_chatty();
  }
}

Status AgentMarker::too_chatty() const {
  const std::string printed = skipped_ + line_;
  return invalid_argument(
      who_ + ": the login shell printed more than " + std::to_string(kMaxMarkerBytes) +
      " bytes before the agent started (" + printed.substr(0, 256) +
      "...): make the remote user's shell rc quiet when not interactive (e.g. `[[ $- == *i* ]] || return` "
      "at the top of ~/.bashrc)");
}

Result<std::string> read_marker(SshExecChannel& ch, const std::string& who) {
  AgentMarker marker(who);
  for (;;) {
    auto found = marker.advance(ch, 100);
    if (!found.ok()) return found.status();
    if (*found) return marker.line();
  }
}

}  // namespace ferry
