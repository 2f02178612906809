// A sharded eval (`hosts: [a, b, c]` on an eval stage) as stages the scheduler already
// knows how to run, retry and resume: one shard stage per listed host,
// NAME-shard-K-of-N, each an eval of the K-th contiguous part of the prompts on its
// host (no gate), and the stage itself, which keeps its name, outputs and gate, as the
// merge: it needs every shard and joins their reports into the report of the whole
// (jobs/eval/run/shard_merge.h). A host listed k times runs k shards, which divide its
// cores when `threads` is 0. A failed shard is retried or resumed alone; finished
// shards keep their results. validate_workflow runs it first, then checks the shard
// stages as any eval on a host. Plain function; any thread.
#pragma once

#include <string>

#include "workflows/diagnostics.h"
#include "workflows/model.h"

namespace ferry::workflow {

/// The name of shard `index` (0-based) of `count` of stage `stage`.
std::string eval_shard_name(const std::string& stage, int index, int count);

void expand_eval_shards(Workflow& wf, Diagnostics* diagnostics);

}  // namespace ferry::workflow
