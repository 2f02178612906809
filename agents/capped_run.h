// `ferry-agent cap-log --max BYTES LOG -- COMMAND...`: runs COMMAND with its
// stdout and stderr kept in LOG within BYTES (capped_log.h), and exits as it did
// (128 + N when signal N ended it). A Slurm job's script runs its command through
// this, from the agent binary on the shared workdir, so `log_max` holds on the
// cluster's filesystem as it does for a detached job (review-4 P4). TERM, INT and
// HUP are passed on to COMMAND, which stays in our process group (Slurm's proctrack
// may track jobs by it). Its output is kept until COMMAND ends, then what the pipe
// already holds; a process it left running is not waited for.
#pragma once

#include <string>

#include "base/capped_log.h"

namespace ferry {

/// Moves what the pipe `fd` holds into `log`; false at end of file, or when a
/// non-blocking pipe is empty (errno EAGAIN). Bytes the log cannot take (disk full)
/// are marked as dropped rather than stalling the job.
bool forward_log(int fd, CappedLogWriter* log, std::string* buf);

/// The `cap-log` subcommand; argv[0] is "cap-log". Returns the exit status.
int cap_log_main(int argc, char** argv);

}  // namespace ferry
