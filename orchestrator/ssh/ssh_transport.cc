#include "orchestrator/ssh/ssh_transport.h"

#include <cstring>

#include "orchestrator/ssh/agent_bootstrap.h"
#include "orchestrator/ssh/shell_quote.h"

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

Status SshTransport::open() {
  close();
  session_ = std::make_unique<SshSession>(target_);
  FERRY_RETURN_IF_ERROR(session_->connect());
  std::string command = remote_command_;
  if (command.empty()) {
    auto path = ensure_remote_agent(*session_, local_agent_path_, target_.workdir, &uploaded_agent_);
    if (!path.ok()) {
      Status s = path.status();
      close();
      return s;
    }
    remote_agent_path_ = *path;
    const std::string workdir = target_.workdir.empty() ? "." : target_.workdir;
    command = shell_quote(remote_agent_path_) + " serve --workdir " + shell_quote(workdir);
  }
  auto ch = session_->open_exec(command);
  if (!ch.ok()) {
    Status s = ch.status();
    close();
    return s;
  }
  channel_ = std::move(*ch);
  if (!rbuf_) rbuf_.reset(new char[kReadWindowBytes]);
  rpos_ = rlen_ = 0;
  return Status();
}

Result<size_t> SshTransport::read_some(char* buf, size_t n, int timeout_ms) {
  if (!channel_) return failed_precondition(describe() + ": transport is not open");
  if (rpos_ == rlen_) {
    rpos_ = rlen_ = 0;
    auto got = channel_->read_some(rbuf_.get(), kReadWindowBytes, timeout_ms);
    if (!got.ok()) return got.status();
    if (*got == 0) {
      if (channel_->at_eof()) {
        std::string err = channel_->stderr_tail();
        if (err.size() > 512) err = err.substr(err.size() - 512);
        return unavailable(describe() + ": the remote `" + channel_->command() + "` closed its output" +
                           (err.empty() ? "" : "; stderr: " + err));
      }
      return size_t{0};
    }
    rlen_ = *got;
  }
  size_t k = std::min(n, rlen_ - rpos_);
  std::memcpy(buf, rbuf_.get() + rpos_, k);
  rpos_ += k;
  return k;
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
  rpos_ = rlen_ = 0;
}

}  // namespace ferry
