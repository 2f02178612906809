// A stage's templates resolved into what its runner gets (jobs/stage_spec.h):
// Scheduler::resolve (one text), Scheduler::resolve_stage (a whole stage, by kind,
// with its host's Slurm options and its upstream outputs) and Scheduler::host_workdir;
// and the hash of a resolved stage's inputs, which decides whether a stage that
// succeeded before is kept on resume. io thread only.
#pragma once

#include <string>

#include "jobs/stage_spec.h"

namespace ferry {

/// The hash of `spec`'s stored inputs (StageSpec::stored_json): equal hashes, the same work.
std::string stage_inputs_hash(const StageSpec& spec);

}  // namespace ferry
