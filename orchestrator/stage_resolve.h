// A stage's templates resolved into what its runner gets (jobs/stage_spec.h), as
// free functions over a ResolveContext (the workflow, the run, ferry's home and the
// other stages' outputs so far), so that they are testable without a Scheduler:
// resolve_text (one text), resolve_host_workdir_of (a host's workdir, templates
// filled), resolve_stage (a whole stage, by kind, with its host's Slurm options and
// its upstream outputs); and the hash of a resolved stage's inputs, which decides
// whether a stage that succeeded before is kept on resume. io thread only.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "base/status.h"
#include "jobs/stage_spec.h"
#include "orchestrator/store.h"
#include "workflows/model.h"

namespace ferry {

/// What resolving a stage reads.
struct ResolveContext {
  const workflow::Workflow& wf;
  const RunRecord& run;  // its id, params and workflow file
  std::string ferry_home;
  /// A stage's outputs so far; null for a stage the workflow does not have.
  std::function<const std::map<std::string, std::string>*(const std::string& stage)> outputs_of;
};

/// `text` with its templates filled (params, run, hosts, stage outputs); shell-quoted
/// values where `shell_quote` (a `run:` script).
Result<std::string> resolve_text(const ResolveContext& ctx, const workflow::Text& text, bool shell_quote);

/// `host`'s workdir with its templates filled, made absolute (resolve_host_workdir).
std::string resolve_host_workdir_of(const ResolveContext& ctx, const workflow::Host& host);

/// `stage` resolved into its runner's spec, or an error naming the file, line and stage.
Result<StageSpec> resolve_stage(const ResolveContext& ctx, const workflow::Stage& stage);

/// The hash of `spec`'s stored inputs (StageSpec::stored_json): equal hashes, the same work.
std::string stage_inputs_hash(const StageSpec& spec);

}  // namespace ferry
