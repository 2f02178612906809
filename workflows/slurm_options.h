// Checks and merging of a workflow's `slurm:` options (sbatch flags), shared by the
// parser (errors at file:line:col) and the scheduler (a stage's options over its
// host's). Plain functions; any thread.
#pragma once

#include <string>
#include <vector>

#include "workflows/model.h"

namespace ferry::workflow {

/// The Slurm ends `retry_on` may name besides exit codes.
const std::vector<std::string>& slurm_retry_causes();

/// "" when `value` is fine for the `slurm:` key `key`, else why not (no place: the caller adds it).
/// mem: N[K|M|G|T]; gres: name[:type]:count or name; partition, account, qos: a plain word.
std::string slurm_value_problem(const std::string& key, const std::string& value);

/// "" when `flag` may go to sbatch as an extra option, else why not: ferry owns the
/// job's name, output, working folder and requeue policy, and the script. The flag is
/// read as sbatch's getopt_long reads it: `--outp=` is --output, `-vo F` is -v -o F.
std::string slurm_extra_problem(const std::string& flag);

/// The stage's options over the host's defaults (the stage's extra flags follow the host's).
SlurmOptions merge_slurm(const SlurmOptions& host, const SlurmOptions& stage);

}  // namespace ferry::workflow
