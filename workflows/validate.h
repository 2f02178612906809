// Whole-workflow checks that need more than one element: hosts and stages that
// exist, needs without cycles, templates that reference something real. Fills in
// defaults that depend on the whole file (an implicit local host, a stage's host
// when there is only one) and expands sharded evals first (eval_shards.h). Plain
// functions; any thread.
#pragma once

#include "workflows/diagnostics.h"
#include "workflows/model.h"

namespace ferry::workflow {

void validate_workflow(Workflow& wf, Diagnostics* diagnostics);

}  // namespace ferry::workflow
