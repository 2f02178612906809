// agent_bootstrap: make sure the right `ferry-agent` binary is on a host.
//
// The binary is addressed by content: <workdir>/.ferry/bin/ferry-agent-<xxh128 hex>
// (file_hash.h). If that path is missing it is uploaded over an exec channel
// (`mkdir -p … && cat > tmp`), the uploaded copy is checked by running it
// (verify_remote_agent: `<tmp> hash-self` must print the same hash), made
// executable and renamed into place, so the final path only ever holds a verified
// binary and concurrent coordinators cannot see a half-written one.
//
// Thread contract: runs on the thread that owns the SshSession.
#pragma once

#include <string>

#include "base/status.h"
#include "orchestrator/hosts/ssh/ssh_session.h"

namespace ferry {

/// Directory, under a host's workdir, holding agent binaries.
constexpr const char* kRemoteAgentDir = ".ferry/bin";
/// Bound on uploading the agent (a few MiB) and on each bootstrap command.
constexpr int kAgentUploadTimeoutMs = 120000;
constexpr int kBootstrapCommandTimeoutMs = 30000;

/// What the agent's start command prints, instead of starting it, when a folder
/// the binary is trusted through is another user's or open to others (review F15):
/// "FERRY-AGENT-UNSAFE <ls mode> <owner uid> <folder>", or for a folder above the
/// workdir "FERRY-AGENT-UNSAFE above <ls mode> <owner uid> <folder>".
constexpr char kAgentUnsafe[] = "FERRY-AGENT-UNSAFE ";

/// A shell fragment for the start command: checks every folder above `workdir` on
/// its physical path (owned by root or the login user, not writable by group or
/// others unless sticky: OpenSSH's safe_path, review-4 F15), then `workdir`, its
/// .ferry and .ferry/bin (those that exist, parents first, symlinks followed: owned
/// by the login user, not writable by group or others), and prints the kAgentUnsafe
/// line and exits for the first that fails. POSIX sh and `ls -ldn` only.
std::string agent_dirs_check_command(const std::string& workdir);

/// The kPermissionDenied error for a kAgentUnsafe line from host `host`.
Status agent_dirs_refusal(const std::string& host, const std::string& marker_line);

/// "<workdir>/.ferry/bin/ferry-agent-<hash_hex>"; workdir "" means the login dir.
std::string remote_agent_path(const std::string& workdir, const std::string& hash_hex);

/// Checks that the remote executable `remote_path` is the binary hashing to
/// `expected_hex` by running `<remote_path> hash-self`, which must print that hash
/// (32 lowercase hex digits; trailing whitespace ignored). kDataLoss on a mismatch.
/// This is the single place to change how an uploaded agent is verified.
Status verify_remote_agent(SshSession& session, const std::string& remote_path,
                           const std::string& expected_hex);

/// Installs the local agent at `local_agent_path` on the host if it is not there
/// yet and returns its remote path. `uploaded` (optional) tells whether it had to.
Result<std::string> ensure_remote_agent(SshSession& session, const std::string& local_agent_path,
                                        const std::string& workdir, bool* uploaded = nullptr);

}  // namespace ferry
