#include "orchestrator/hosts/ssh/ssh_exec_channel.h"

#include <libssh/libssh.h>

#include <algorithm>
#include <chrono>
#include <climits>

#include "orchestrator/hosts/ssh/ssh_session.h"

namespace ferry {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

SshExecChannel::SshExecChannel(SshSession* session, ssh_channel_struct* channel, std::string command)
    : session_(session), channel_(channel), command_(std::move(command)) {}

SshExecChannel::~SshExecChannel() { close(); }

Status SshExecChannel::error_status(const std::string& what) const {
  std::string err = session_->last_error();
  ssh_session s = session_->raw();
  bool dead = s == nullptr || ssh_is_connected(s) == 0;
  if (dead) session_->mark_broken();
  std::string msg = session_->describe() + ": " + what + " (`" + command_ + "`): " + err;
  if (!stderr_tail_.empty())
    msg += "; remote stderr: " + stderr_tail_.substr(stderr_tail_.size() > 512 ? stderr_tail_.size() - 512 : 0);
  return Status(StatusCode::kUnavailable, msg);
}

void SshExecChannel::drain_stderr() {
  char buf[16 * 1024];
  for (;;) {
    auto n = read_stderr_nonblocking(buf, sizeof(buf));
    if (!n.ok() || *n == 0) return;
  }
}

Result<size_t> SshExecChannel::read_stderr_nonblocking(char* buf, size_t n) {
  if (channel_ == nullptr || broken_) return Status(StatusCode::kFailedPrecondition, "channel closed");
  int r = ssh_channel_read_nonblocking(channel_, buf, static_cast<uint32_t>(std::min<size_t>(n, INT_MAX)), 1);
  if (r == SSH_ERROR) {
    broken_ = true;
    return error_status("stderr read failed");
  }
  if (r <= 0) return size_t{0};
  stderr_tail_.append(buf, static_cast<size_t>(r));
  if (stderr_tail_.size() > kStderrTailBytes) stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
  return static_cast<size_t>(r);
}

Result<size_t> SshExecChannel::read_some(char* buf, size_t n, int timeout_ms) {
  if (channel_ == nullptr) return Status(StatusCode::kFailedPrecondition, "channel closed");
  if (broken_) return Status(StatusCode::kUnavailable, session_->describe() + ": channel is broken");
  int r = ssh_channel_read_timeout(channel_, buf, static_cast<uint32_t>(std::min<size_t>(n, INT_MAX)), 0,
                                   std::max(timeout_ms, 0));
  if (r == SSH_ERROR) {
    broken_ = true;
    return error_status("read failed");
  }
  // stderr costs a poll() per look, so look when stdout is quiet and now and then
  // while it flows. (It cannot stall stdout: libssh grants window on stdout reads.)
  auto now = Clock::now();
  if (r == 0 || now >= next_stderr_drain_) {
    next_stderr_drain_ = now + std::chrono::milliseconds(kStderrDrainEveryMs);
    drain_stderr();
  }
  return static_cast<size_t>(std::max(r, 0));
}

Status SshExecChannel::write_all(const char* data, size_t n) {
  if (channel_ == nullptr) return Status(StatusCode::kFailedPrecondition, "channel closed");
  if (broken_) return Status(StatusCode::kUnavailable, session_->describe() + ": channel is broken");
  size_t off = 0;
  auto last_progress = Clock::now();
  while (off < n) {
    uint32_t chunk = static_cast<uint32_t>(std::min(n - off, kWriteChunkBytes));
    // Blocks for window space at most libssh's timeout (kWriteStallTimeoutMs, set
    // by SshSession after auth); on expiry it returns a short count, not an error.
    int w = ssh_channel_write(channel_, data + off, chunk);
    if (w == SSH_ERROR) {
      broken_ = true;
      return error_status("write failed after " + std::to_string(off) + " of " + std::to_string(n) + " bytes");
    }
    if (w > 0) {
      off += static_cast<size_t>(w);
      last_progress = Clock::now();
      continue;
    }
    if (ssh_channel_is_closed(channel_) || ssh_channel_is_eof(channel_)) {
      broken_ = true;
      return error_status("remote end closed while writing");
    }
    if (Clock::now() - last_progress >= std::chrono::milliseconds(kWriteStallTimeoutMs)) {
      return Status(StatusCode::kDeadlineExceeded,
                    session_->describe() + ": remote `" + command_ + "` read nothing for " +
                        std::to_string(kWriteStallTimeoutMs / 1000) + " s");
    }
  }
  return Status();
}

Status SshExecChannel::send_eof() {
  if (channel_ == nullptr) return Status(StatusCode::kFailedPrecondition, "channel closed");
  if (ssh_channel_send_eof(channel_) != SSH_OK) return error_status("cannot send EOF");
  return Status();
}

bool SshExecChannel::at_eof() const {
  return channel_ == nullptr || ssh_channel_is_eof(channel_) != 0;
}

Result<int> SshExecChannel::exit_status(int timeout_ms) {
  if (channel_ == nullptr) return Status(StatusCode::kFailedPrecondition, "channel closed");
  session_->set_io_timeout_ms(timeout_ms);
  int st = ssh_channel_get_exit_status(channel_);
  session_->set_io_timeout_ms(kWriteStallTimeoutMs);
  if (st == SSH_ERROR && ssh_is_connected(session_->raw()) == 0) return error_status("no exit status");
  return st;
}

void SshExecChannel::close() {
  if (channel_ == nullptr) return;
  ssh_channel ch = channel_;
  channel_ = nullptr;
  session_->forget_channel(this);
  if (session_->broken() || broken_) {
    // Nothing can be said over a dead link; free without waiting for a flush.
    session_->set_io_timeout_ms(1);
  } else {
    session_->set_io_timeout_ms(kCloseTimeoutMs);
    if (ssh_channel_is_open(ch)) ssh_channel_close(ch);
  }
  ssh_channel_free(ch);
  session_->set_io_timeout_ms(kWriteStallTimeoutMs);
}

}  // namespace ferry
