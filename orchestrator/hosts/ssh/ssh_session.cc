#include "orchestrator/hosts/ssh/ssh_session.h"

#include <libssh/libssh.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>

#include "base/ferry_home.h"
#include "base/file_lock.h"
#include "base/file_util.h"
#include "base/login_shell_command.h"
#include "orchestrator/hosts/ssh/cipher_choice.h"
#include "orchestrator/hosts/ssh/tcp_socket.h"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<long long>(left, 0));
}

std::string get_string_option(ssh_session s, ssh_options_e opt) {
  char* v = nullptr;
  if (ssh_options_get(s, opt, &v) != SSH_OK || v == nullptr) return "";
  std::string out(v);
  ssh_string_free_char(v);
  return out;
}

// "ssh-ed25519" -> "ed25519" (ssh-keyscan -t wants the short name).
std::string keyscan_type(const std::string& key_type) {
  if (key_type.rfind("ssh-", 0) == 0) return key_type.substr(4);
  if (key_type.rfind("ecdsa", 0) == 0) return "ecdsa";
  return key_type;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

SshSession::SshSession(SshTarget target) : target_(std::move(target)) {
  host_ = target_.address;
  port_ = target_.port;
  user_ = target_.user;
}

SshSession::~SshSession() { disconnect(); }

bool SshSession::connected() const {
  return session_ != nullptr && authenticated_ && !broken_ && ssh_is_connected(session_) != 0;
}

std::string SshSession::last_error() const {
  if (session_ == nullptr) return "no session";
  const char* e = ssh_get_error(session_);
  return (e && *e) ? e : "unknown libssh error";
}

std::string SshSession::describe() const {
  std::string u = user_.empty() ? "" : user_ + "@";
  return "ssh " + u + host_ + ":" + std::to_string(port_);
}

void SshSession::set_timeout_ms(int ms) {
  if (session_ == nullptr) return;
  // libssh adds the two together; a 0/0 pair would mean "wait forever".
  long sec = std::max(ms, 1) / 1000;
  long usec = (std::max(ms, 1) % 1000) * 1000L;
  ssh_options_set(session_, SSH_OPTIONS_TIMEOUT, &sec);
  ssh_options_set(session_, SSH_OPTIONS_TIMEOUT_USEC, &usec);
}

Status SshSession::apply_options() {
  session_ = ssh_new();
  if (session_ == nullptr) return internal_error("ssh_new failed");
  const std::string where = target_.name.empty() ? target_.address : target_.name;
  if (!target_.user.empty() && ssh_options_set(session_, SSH_OPTIONS_USER, target_.user.c_str()) != SSH_OK) {
    return invalid_argument(where + ": bad user '" + target_.user + "': " + last_error());
  }
  if (ssh_options_set(session_, SSH_OPTIONS_HOST, target_.address.c_str()) != SSH_OK) {
    return invalid_argument(where + ": bad address '" + target_.address + "': " + last_error());
  }
  // Set before the config is read, so the config's Ciphers (and then the host's
  // `ciphers:`) override it.
  const std::string preferred = default_cipher_preference();
  if (!preferred.empty()) {
    ssh_options_set(session_, SSH_OPTIONS_CIPHERS_C_S, preferred.c_str());
    ssh_options_set(session_, SSH_OPTIONS_CIPHERS_S_C, preferred.c_str());
  }
  // The config decides HostName/User/Port/IdentityFile/ProxyJump before we open
  // the socket ourselves, so it is read here rather than inside ssh_connect.
  if (target_.ssh_config == "none") {
    bool off = false;
    ssh_options_set(session_, SSH_OPTIONS_PROCESS_CONFIG, &off);
  } else {
    const char* file = nullptr;
    if (!target_.ssh_config.empty()) {
      if (access(target_.ssh_config.c_str(), R_OK) != 0) {
        return not_found(where + ": ssh config " + target_.ssh_config + " is not readable");
      }
      file = target_.ssh_config.c_str();
    }
    if (ssh_options_parse_config(session_, file) != 0) {
      return invalid_argument(where + ": cannot parse ssh config: " + last_error());
    }
  }
  if (!target_.ciphers.empty() &&
      (ssh_options_set(session_, SSH_OPTIONS_CIPHERS_C_S, target_.ciphers.c_str()) != SSH_OK ||
       ssh_options_set(session_, SSH_OPTIONS_CIPHERS_S_C, target_.ciphers.c_str()) != SSH_OK)) {
    return invalid_argument(where + ": ciphers '" + target_.ciphers +
                            "': none this ssh client supports: " + last_error());
  }
  if (target_.port != 22) {
    unsigned int port = static_cast<unsigned int>(target_.port);
    ssh_options_set(session_, SSH_OPTIONS_PORT, &port);
  }
  if (!target_.identity.empty()) {
    if (access(target_.identity.c_str(), R_OK) != 0) {
      return not_found(where + ": identity file " + target_.identity + " is not readable");
    }
    // SSH_OPTIONS_IDENTITY puts it at the front of the list publickey_auto walks.
    ssh_options_set(session_, SSH_OPTIONS_IDENTITY, target_.identity.c_str());
  }
  if (!target_.known_hosts.empty()) {
    ssh_options_set(session_, SSH_OPTIONS_KNOWNHOSTS, target_.known_hosts.c_str());
  }
  host_ = get_string_option(session_, SSH_OPTIONS_HOST);
  unsigned int port = 22;
  if (ssh_options_get_port(session_, &port) == SSH_OK && port != 0) port_ = static_cast<int>(port);
  user_ = get_string_option(session_, SSH_OPTIONS_USER);
  if (user_.empty()) {
    const char* u = std::getenv("USER");
    user_ = u ? u : "";
  }
  proxied_ = !get_string_option(session_, SSH_OPTIONS_PROXYCOMMAND).empty();
  return Status();
}

Status SshSession::connect() {
  if (session_ != nullptr) disconnect();
  broken_ = false;
  authenticated_ = false;
  nobody_there_ = false;
  const auto deadline = Clock::now() + std::chrono::milliseconds(target_.connect_timeout_ms);
  Status s = apply_options();
  if (!s.ok()) {
    disconnect();
    return s;
  }
  if (!proxied_) {
    Result<int> fd = tcp_connect(host_, port_, ms_left(deadline), &nobody_there_);
    if (!fd.ok()) {
      disconnect();
      return fd.status().with_context(describe());
    }
    pending_fd_ = *fd;
    socket_t sfd = pending_fd_;
    ssh_options_set(session_, SSH_OPTIONS_FD, &sfd);
  }
  // Handshake + auth share the connect budget. (libssh takes the socket from here on.)
  set_timeout_ms(std::max(ms_left(deadline), 1));
  int rc = ssh_connect(session_);
  pending_fd_ = -1;
  if (rc != SSH_OK) {
    std::string err = last_error();
    bool timed_out = ms_left(deadline) == 0;
    disconnect();
    return Status(timed_out ? StatusCode::kDeadlineExceeded : StatusCode::kUnavailable,
                  describe() + ": SSH handshake failed: " + err);
  }
  s = verify_host_key();
  if (s.ok()) s = authenticate();
  if (!s.ok()) {
    disconnect();
    return s;
  }
  authenticated_ = true;
  // From here libssh's timeout bounds window waits in writes (see ssh_exec_channel.h).
  set_timeout_ms(kWriteStallTimeoutMs);
  return Status();
}

namespace {

// The key the server offered: its type ("ssh-ed25519") and SHA-256 fingerprint.
struct OfferedKey {
  std::string type = "?";
  std::string fingerprint = "?";
};

Result<OfferedKey> offered_key(const SshSession& session) {
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(session.raw(), &key) != SSH_OK) {
    return unavailable(session.describe() + ": no host key from server: " + session.last_error());
  }
  OfferedKey out;
  if (const char* type = ssh_key_type_to_char(ssh_key_type(key))) out.type = type;
  unsigned char* hash = nullptr;
  size_t hlen = 0;
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) == 0) {
    char* f = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen);
    if (f) {
      out.fingerprint = f;
      ssh_string_free_char(f);
    }
    ssh_clean_pubkey_hash(&hash);
  }
  ssh_key_free(key);
  return out;
}

// The offered key against one known_hosts file at a time (the session's
// SSH_OPTIONS_KNOWNHOSTS), and the refusals that name the host, the key and the
// user's file (`user_file`) with how to trust it.
class HostKeyCheck {
 public:
  HostKeyCheck(const SshSession& session, const OfferedKey& key, std::string user_file)
      : session_(session),
        key_type_(key.type),
        user_file_(std::move(user_file)) {
    const std::string& host = session.host();
    const std::string port = std::to_string(session.port());
    who_ = (session.target().name.empty() ? "" : session.target().name + " ") + "(" + host + ":" + port + ")";
    host_for_keygen_ = session.port() == 22 ? host : "[" + host + "]:" + port;
    char* e = nullptr;
    if (ssh_session_export_known_hosts_entry(session.raw(), &e) == SSH_OK && e != nullptr) {
      entry_ = trim(e);
      ssh_string_free_char(e);
    }
  }

  // What the file the session points at says: a verdict, or nullopt when the host is not in it.
  std::optional<Status> verdict_in(const std::string& in) const {
    switch (ssh_session_is_known_server(session_.raw())) {
      case SSH_KNOWN_HOSTS_OK: return Status();
      case SSH_KNOWN_HOSTS_CHANGED:
      case SSH_KNOWN_HOSTS_OTHER: return changed(in);
      case SSH_KNOWN_HOSTS_UNKNOWN:
      case SSH_KNOWN_HOSTS_NOT_FOUND: return std::nullopt;
      case SSH_KNOWN_HOSTS_ERROR:
      default:
        return internal_error(session_.describe() + ": cannot check the host key against " + in + ": " +
                              session_.last_error());
    }
  }

  Status unknown() const {
    const std::string port = std::to_string(session_.port());
    const std::string how_to_trust =
        "If this is the right key (compare the fingerprint out of band), trust it with `ssh-keyscan -p " + port +
        " -t " + keyscan_type(key_type_) + " " + session_.host() + " >> " + user_file_ + "`, or add this line to " +
        user_file_ + ": `" + entry_ + "`, or set `trust: first-use` on this host in the workflow.";
    return permission_denied("unknown host key for " + who_ + ": " + session_.host_key_fingerprint() + " is not in " +
                             user_file_ + ". Refusing to connect (no authentication attempted). " + how_to_trust);
  }

 private:
  Status changed(const std::string& in) const {
    return permission_denied(
        "HOST KEY CHANGED for " + who_ + ": the server offers " + session_.host_key_fingerprint() + ", but " + in +
        " holds a different key for it. Someone may be intercepting the connection, or the host "
        "was reinstalled. Refusing to connect (no authentication attempted). If the change is "
        "expected, remove the old entry with `ssh-keygen -R " +
        host_for_keygen_ + " -f " + in + "` and trust the new key. (trust: first-use never accepts a changed key.)");
  }

  const SshSession& session_;
  std::string key_type_;
  std::string user_file_;
  std::string who_;              // "NAME (HOST:PORT)"
  std::string host_for_keygen_;  // as ssh-keygen -R names it
  std::string entry_;            // the known_hosts line that would trust the key
};

// Where ferry keeps the keys it trusted on first use; "" when it has no home.
std::string first_use_known_hosts(const SshTarget& target) {
  if (!target.first_use_known_hosts.empty()) return target.first_use_known_hosts;
  return ferry_home_dir().empty() ? "" : ferry_home_dir() + "/known_hosts";
}

}  // namespace

// The user's known_hosts first, then ferry's own file, where an unknown key is
// recorded with trust: first-use.
Status SshSession::verify_host_key() {
  Result<OfferedKey> key = offered_key(*this);
  if (!key.ok()) return key.status();
  fingerprint_ = key->type + " " + key->fingerprint;
  std::string file = get_string_option(session_, SSH_OPTIONS_KNOWNHOSTS);
  if (file.empty()) file = "~/.ssh/known_hosts";
  const HostKeyCheck check(*this, *key, file);
  // The user's known_hosts first: a key there decides.
  if (auto v = check.verdict_in(file)) return *v;
  // Then the keys ferry itself trusted on first use, kept in a file of its own: the
  // user's may be /dev/null (common for cloud VMs), where a recorded key would be
  // forgotten and every later key, a man in the middle's too, accepted.
  const std::string own = first_use_known_hosts(target_);
  if (own.empty()) {
    if (!target_.trust_first_use) return check.unknown();
    return failed_precondition(describe() +
                               ": trust: first-use records the key in $FERRY_HOME/known_hosts, "
                               "and neither FERRY_HOME nor HOME is set");
  }
  ssh_options_set(session_, SSH_OPTIONS_KNOWNHOSTS, own.c_str());
  if (auto v = check.verdict_in(own)) return *v;
  if (!target_.trust_first_use) return check.unknown();
  // First use, one connection at a time per coordinator machine: lanes racing on a
  // new host would each record the key they were offered.
  if (Status made = make_dirs(dirname_of(own)); !made.ok()) return made;
  auto lock = FileLock::take(own + ".lock");
  if (!lock.ok()) return lock.status();
  if (auto v = check.verdict_in(own)) return *v;  // another connection recorded it meanwhile
  if (ssh_session_update_known_hosts(session_) != SSH_OK) {
    return internal_error(describe() + ": cannot record the host key in " + own + ": " + last_error());
  }
  return Status();
}

Status SshSession::authenticate() {
  int rc = ssh_userauth_publickey_auto(session_, nullptr, nullptr);
  if (rc == SSH_AUTH_SUCCESS) return Status();
  std::string keys;
  auto add = [&keys](const std::string& k) { keys += (keys.empty() ? "" : ", ") + k; };
  if (!target_.identity.empty()) add(target_.identity);
  if (const char* sock = std::getenv("SSH_AUTH_SOCK"); sock && *sock) add(std::string("ssh-agent (") + sock + ")");
  if (const char* home = std::getenv("HOME"); home && *home) {
    for (const char* k : {"id_ed25519", "id_ecdsa", "id_rsa"}) {
      std::string p = std::string(home) + "/.ssh/" + k;
      if (access(p.c_str(), R_OK) == 0) add(p);
    }
  }
  if (target_.ssh_config != "none") add("IdentityFile entries of the ssh config");
  std::string err = last_error();
  if (rc == SSH_AUTH_ERROR) {
    if (ssh_is_connected(session_) == 0) broken_ = true;
    return unavailable("authentication error for " + user_ + "@" + host_ + ":" + std::to_string(port_) + ": " + err);
  }
  if (rc == SSH_AUTH_AGAIN) {
    // No answer within the timeout (a link cut in the middle of the login, a
    // stalled server): worth another try, unlike a refused key.
    broken_ = true;
    return unavailable("no answer to the authentication from " + user_ + "@" + host_ + ":" + std::to_string(port_) +
                       " within the timeout");
  }
  return permission_denied("authentication failed for " + user_ + "@" + host_ + ":" + std::to_string(port_) +
                           " with keys: " + (keys.empty() ? "(none found)" : keys) +
                           (rc == SSH_AUTH_PARTIAL ? " (partial success: the server wants another method)" : "") +
                           (err.empty() ? "" : " [" + err + "]"));
}

// A fresh channel of a session that is connected and not known to be broken.
int SshSession::fd() const {
  if (session_ == nullptr || broken_) return -1;
  return ssh_get_fd(session_);
}

Result<ssh_channel_struct*> SshSession::new_channel() {
  if (session_ == nullptr || !authenticated_) return failed_precondition(describe() + ": not connected");
  if (broken_) return unavailable(describe() + ": connection is broken");
  ssh_channel ch = ssh_channel_new(session_);
  if (ch == nullptr) return internal_error(describe() + ": ssh_channel_new: " + last_error());
  return ch;
}

// Frees a channel the server did not open. A dead link marks the session broken and
// is kUnavailable (worth a reconnect); else the refusal is `if_alive`.
Status SshSession::channel_failure(ssh_channel_struct* ch, StatusCode if_alive, const std::string& what) {
  std::string err = last_error();
  bool dead = ssh_is_connected(session_) == 0;
  if (dead) broken_ = true;
  ssh_channel_free(ch);
  return Status(dead ? StatusCode::kUnavailable : if_alive, describe() + ": " + what + ": " + err);
}

Result<std::unique_ptr<SshExecChannel>> SshSession::open_exec(const std::string& command) {
  // The login shell may be csh or fish: it only starts /bin/sh on the text.
  auto wrapped = login_shell_command(command);
  if (!wrapped.ok()) return wrapped.status().with_context(describe());
  auto ch = new_channel();
  if (!ch.ok()) return ch.status();
  if (ssh_channel_open_session(*ch) != SSH_OK) {
    return channel_failure(*ch, StatusCode::kInternal, "cannot open a channel");
  }
  if (ssh_channel_request_exec(*ch, wrapped->c_str()) != SSH_OK) {
    return channel_failure(*ch, StatusCode::kInternal, "exec request refused");
  }
  auto out = std::make_unique<SshExecChannel>(this, *ch, command);
  channels_.push_back(out.get());
  return out;
}

Result<std::unique_ptr<SshExecChannel>> SshSession::open_unix_socket(const std::string& path) {
  auto ch = new_channel();
  if (!ch.ok()) return ch.status();
  // The originator address and port are informational only (sshd logs them).
  if (ssh_channel_open_forward_unix(*ch, path.c_str(), "127.0.0.1", 0) != SSH_OK) {
    return channel_failure(*ch, StatusCode::kFailedPrecondition, "no channel to unix socket " + path);
  }
  auto out = std::make_unique<SshExecChannel>(this, *ch, "unix socket " + path);
  channels_.push_back(out.get());
  return out;
}

void SshSession::forget_channel(SshExecChannel* channel) {
  channels_.erase(std::remove(channels_.begin(), channels_.end(), channel), channels_.end());
}

Result<ExecResult> SshSession::run(const std::string& command, const std::string& input, int timeout_ms) {
  // How long one wait may last before stderr is drained and the deadline re-checked.
  constexpr int kReadSliceMs = 200;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto ch = open_exec(command);
  if (!ch.ok()) return ch.status();
  SshExecChannel& c = **ch;
  if (!input.empty()) FERRY_RETURN_IF_ERROR(c.write_all(input.data(), input.size()));
  FERRY_RETURN_IF_ERROR(c.send_eof());
  ExecResult r;
  std::string buf(256 * 1024, '\0');
  while (!c.at_eof()) {
    int left = ms_left(deadline);
    if (left == 0) {
      return Status(StatusCode::kDeadlineExceeded,
                    describe() + ": `" + command + "` did not finish within " + std::to_string(timeout_ms) + " ms");
    }
    auto n = c.read_some(&buf[0], buf.size(), std::min(left, kReadSliceMs));
    if (!n.ok()) return n.status();
    r.out.append(buf.data(), *n);
    for (;;) {
      auto e = c.read_stderr_nonblocking(&buf[0], buf.size());
      if (!e.ok() || *e == 0) break;
      r.err.append(buf.data(), *e);
    }
  }
  for (;;) {
    auto e = c.read_stderr_nonblocking(&buf[0], buf.size());
    if (!e.ok() || *e == 0) break;
    r.err.append(buf.data(), *e);
  }
  auto st = c.exit_status(std::max(ms_left(deadline), 1));
  if (!st.ok()) return st.status();
  r.exit_status = *st;
  // stderr that read_some drained internally is in the tail; prefer the full copy.
  if (r.err.empty()) r.err = c.stderr_tail();
  return r;
}

void SshSession::disconnect() {
  std::vector<SshExecChannel*> live = std::move(channels_);
  channels_.clear();
  for (SshExecChannel* c : live) {
    if (!broken_) c->close();
    c->detach();
  }
  if (session_ != nullptr) {
    // With SSH_OPTIONS_FD libssh neither closes our socket in ssh_disconnect nor
    // forgets to: it resets it. Take it back first (-1 if libssh closed it on error).
    int fd = proxied_ ? -1 : ssh_get_fd(session_);
    set_timeout_ms(kCloseTimeoutMs);
    if (!broken_) ssh_disconnect(session_);
    ssh_free(session_);  // closes the socket if ssh_disconnect did not run
    if (!broken_ && fd >= 0) ::close(fd);
    session_ = nullptr;
  }
  if (pending_fd_ >= 0) {
    ::close(pending_fd_);
    pending_fd_ = -1;
  }
  authenticated_ = false;
}

}  // namespace ferry
