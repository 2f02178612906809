// Push: the sending end of a direct copy (`route: direct`), run on the SOURCE
// host as `ferry-agent push`, itself a detached job of that host's agent, so it
// survives the coordinator's link to the source dropping (docs/DESIGN.md §3 step 4).
//
// It starts the source host's own OpenSSH client towards the destination —
//   ssh [-F $HOME/.ssh/config] -o BatchMode=yes … [-p PORT] [-l USER] ADDRESS
//       'exec DEST_AGENT serve --workdir DEST_WORKDIR'
// — once per stream, and speaks the agent protocol over each: the same plan,
// chunk hashes (XXH3-128), receiver ops, journal and completion marker as the
// relay (copy_plan.h; chunk_files.h is the receiver), so a direct copy and a
// relay resume each other's partial files. -F is given only when $HOME is not
// the account's home (OpenSSH reads ~/.ssh from the password database, not from
// $HOME); otherwise ssh finds its config, keys and known_hosts by itself.
//
// Each stream keeps a few recv.write requests in flight and re-reads a chunk
// from the source file when it must be sent again, so memory is about one chunk
// per stream. A stream that loses its link puts its chunks back, reconnects with
// backoff and jitter, and gives up after `give_up_s` without the destination;
// failures no retry can fix (host key not trusted, login refused, the agent
// missing, disk full) end the push at once with a message naming both hosts.
// Progress lines (push_progress.h) go to `log` about once a second.
//
// Thread contract: run_push() blocks its caller and runs one thread per stream.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "transfer/push_spec.h"

namespace ferry {

struct PushResult {
  std::string manifest_hash;
  int64_t bytes_total = 0;
};

/// What the destination prints just before its agent starts: the frames follow
/// it, and whatever a login rc printed before it is skipped.
inline constexpr char kPushAgentReady[] = "FERRY-PUSH-READY";

/// The ssh command line of one stream. `home` is $HOME, `account_home` the
/// password database's home of this user ("" when it has no entry there). The
/// remote text runs under /bin/sh whatever the login shell (login_shell_command.h);
/// a destination path holding a line break is an InvalidArgument.
Result<std::vector<std::string>> push_ssh_command(const PushSpec& spec, const std::string& home,
                                                  const std::string& account_home);

/// Sends the source to the destination. `superseded` is asked once a second; a
/// non-empty answer stops the push with that reason (a newer attempt took over).
Result<PushResult> run_push(const PushSpec& spec, std::FILE* log, std::function<std::string()> superseded = {});

}  // namespace ferry
