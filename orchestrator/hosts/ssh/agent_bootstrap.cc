#include "orchestrator/hosts/ssh/agent_bootstrap.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "base/file_hash.h"
#include "base/shell_quote.h"

namespace ferry {
namespace {

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

std::string random_suffix() {
  std::random_device rd;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%d.%08x", static_cast<int>(getpid()), rd());
  return buf;
}

std::string brief(const ExecResult& r) {
  std::string e = trim(r.err);
  if (e.size() > 400) e = e.substr(e.size() - 400);
  return "exit " + std::to_string(r.exit_status) + (e.empty() ? "" : ": " + e);
}

// Streams the local file into `cat > tmp` on the host and makes it executable.
// (One exec per step costs a round trip plus the remote shell's start-up.)
Status upload(SshSession& session, const std::string& local_path, const std::string& tmp) {
  FILE* f = std::fopen(local_path.c_str(), "rb");
  if (f == nullptr) return errno_status("cannot open agent " + local_path, errno);
  const std::string cmd = "umask 077 && mkdir -p " + shell_quote(dir_of(tmp)) + " && cat > " + shell_quote(tmp) +
                          " && chmod 700 " + shell_quote(tmp);
  auto ch = session.open_exec(cmd);
  if (!ch.ok()) {
    std::fclose(f);
    return ch.status();
  }
  std::string buf(1 << 20, '\0');
  size_t got;
  Status s;
  while (s.ok() && (got = std::fread(&buf[0], 1, buf.size(), f)) > 0) s = (*ch)->write_all(buf.data(), got);
  bool read_failed = std::ferror(f) != 0;
  std::fclose(f);
  if (!s.ok()) return s.with_context("uploading the agent");
  if (read_failed) return internal_error("cannot read agent " + local_path);
  FERRY_RETURN_IF_ERROR((*ch)->send_eof());
  // Wait for `cat` to finish: its stdout closes when it exits.
  char sink[4096];
  while (!(*ch)->at_eof()) {
    auto n = (*ch)->read_some(sink, sizeof(sink), kAgentUploadTimeoutMs);
    if (!n.ok()) return n.status();
    if (*n == 0 && !(*ch)->at_eof()) {
      return Status(StatusCode::kDeadlineExceeded, session.describe() + ": agent upload did not finish");
    }
  }
  auto st = (*ch)->exit_status(kBootstrapCommandTimeoutMs);
  if (!st.ok()) return st.status();
  if (*st != 0) {
    return internal_error(session.describe() + ": `" + cmd + "` failed with exit " + std::to_string(*st) + ": " +
                          trim((*ch)->stderr_tail()));
  }
  return Status();
}

}  // namespace

std::string remote_agent_path(const std::string& workdir, const std::string& hash_hex) {
  std::string base = workdir.empty() ? "." : workdir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + "/" + kRemoteAgentDir + "/ferry-agent-" + hash_hex;
}

namespace {

// The folders above `workdir` (review-4 F15, OpenSSH's safe_path): on the physical
// path (`cd -P`, symlinks resolved), each must be root's or the login user's and not
// writable by group or others unless sticky (/tmp), or another user could rename the
// workdir away and put their own agent in its place between this check and the
// exec. A workdir not made yet is checked from its nearest existing folder. The
// 10th letter of ls's mode is t or T for a sticky folder.
std::string ancestors_check(const std::string& workdir) {
  return "d=" + shell_quote(workdir) +
         "; while [ ! -d \"$d\" ] && [ \"$d\" != / ] && [ \"$d\" != . ]; do d=$(dirname -- \"$d\"); done; "
         "p=$(cd -P -- \"$d\" 2>/dev/null && pwd -P) || p=; [ \"$d\" = " +
         shell_quote(workdir) +
         " ] || p=$p/.; while [ -n \"$p\" ] && [ \"$p\" != / ]; do p=${p%/*}; [ -n \"$p\" ] || p=/; "
         "set -- $(ls -ldn -- \"$p\"); ok=; case \"$3\" in 0|\"$u\") ok=1;; esac; "
         "case \"$1\" in ?????????[tT]*) ;; ?????w*|????????w*) ok=;; esac; [ -n \"$ok\" ] && continue; printf '" +
         kAgentUnsafe + "above %s %s %s\\n' \"$1\" \"$3\" \"$p\"; exit 0; done";
}

}  // namespace

std::string agent_dirs_check_command(const std::string& workdir) {
  std::string dirs;
  for (const char* sub : {"", "/.ferry", "/.ferry/bin"}) dirs += " " + shell_quote(workdir + sub);
  // ls's mode string: the 6th letter is the group's write bit, the 9th the others'.
  return std::string("set -f; u=$(id -u); ") + ancestors_check(workdir) + "; for d in" + dirs +
         "; do [ -e \"$d\" ] || continue; set -- $(ls -ldnL \"$d\"); case \"$1\" in ?????w*|????????w*) ;; "
         "*) [ \"$3\" = \"$u\" ] && continue;; esac; printf '" +
         kAgentUnsafe + "%s %s %s\\n' \"$1\" \"$3\" \"$d\"; exit 0; done; set +f";
}

Status agent_dirs_refusal(const std::string& host, const std::string& marker_line) {
  std::string rest = trim(marker_line.substr(std::strlen(kAgentUnsafe)));
  const bool above = rest.rfind("above ", 0) == 0;
  if (above) rest = rest.substr(6);
  size_t a = rest.find(' ');
  size_t b = a == std::string::npos ? a : rest.find(' ', a + 1);
  if (b == std::string::npos) return permission_denied(host + ": unsafe agent folder: " + rest);
  std::string mode = rest.substr(0, a), uid = rest.substr(a + 1, b - a - 1), dir = rest.substr(b + 1);
  if (above) {
    return permission_denied(host + ": refusing to run the agent below " + dir + " (mode " + mode + ", owner uid " +
                             uid +
                             "): every folder above the workdir must be owned by root or the login user "
                             "and not writable by group or others unless sticky (chmod +t), or another user could "
                             "move the workdir away and put their own agent in its place; use a workdir in a "
                             "folder only you can write");
  }
  return permission_denied(host + ": refusing to run the agent from " + dir + " (mode " + mode + ", owner uid " +
                           uid + "): it must be owned by the login user and not writable by group or others, "
                           "or another user could replace the agent ferry runs there; fix it with `chmod go-w " +
                           dir + "` or use a workdir of your own");
}

Status verify_remote_agent(SshSession& session, const std::string& remote_path, const std::string& expected_hex) {
  auto r = session.run(shell_quote(remote_path) + " hash-self", {}, kBootstrapCommandTimeoutMs);
  if (!r.ok()) return r.status();
  if (r->exit_status != 0) {
    return internal_error(session.describe() + ": cannot run the agent `" + remote_path + " hash-self` (" +
                          brief(*r) + ")");
  }
  // The hash is the last word: a login rc may have printed before it, even on its line.
  std::string got = trim(r->out);
  if (size_t sp = got.find_last_of(" \t\r\n"); sp != std::string::npos) got = got.substr(sp + 1);
  if (got != expected_hex) {
    return data_loss(session.describe() + ": agent at " + remote_path + " hashes to '" + got.substr(0, 64) +
                     "', expected " + expected_hex);
  }
  return Status();
}

Result<std::string> ensure_remote_agent(SshSession& session, const std::string& local_agent_path,
                                        const std::string& workdir, bool* uploaded) {
  if (uploaded) *uploaded = false;
  auto hash = xxh128_file_hex(local_agent_path);
  if (!hash.ok()) return hash.status();
  const std::string final_path = remote_agent_path(workdir, *hash);
  auto present = session.run("test -x " + shell_quote(final_path), {}, kBootstrapCommandTimeoutMs);
  if (!present.ok()) return present.status();
  if (present->exit_status == 0) return final_path;

  const std::string tmp = dir_of(final_path) + "/.ferry-agent-" + *hash + ".tmp." + random_suffix();
  Status s = upload(session, local_agent_path, tmp);
  if (s.ok()) s = verify_remote_agent(session, tmp, *hash);
  if (s.ok()) {
    auto mv = session.run("mv -f " + shell_quote(tmp) + " " + shell_quote(final_path), {}, kBootstrapCommandTimeoutMs);
    if (!mv.ok()) {
      s = mv.status();
    } else if (mv->exit_status != 0) {
      s = internal_error(session.describe() + ": cannot move the agent into place (" + brief(*mv) + ")");
    }
  }
  if (!s.ok()) {
    if (!session.broken()) (void)session.run("rm -f " + shell_quote(tmp), {}, kBootstrapCommandTimeoutMs);
    return s;
  }
  if (uploaded) *uploaded = true;
  return final_path;
}

}  // namespace ferry
