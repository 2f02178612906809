// The stage graph of a workflow: cycles, ancestors, a topological order.
// Plain functions over a parsed Workflow whose `needs` names may be unknown
// (unknown names are ignored here; validation reports them). Any thread.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "workflows/model.h"

namespace ferry::workflow {

/// One cycle as the list of its stages with the first repeated at the end
/// (a → b → a: a needs b, b needs a), or empty when the graph is acyclic. A stage
/// that needs itself is not a cycle here; validation reports it on its own.
std::vector<std::string> find_cycle(const Workflow& wf);

/// Every stage that `stage` depends on, directly or not.
std::set<std::string> ancestors(const Workflow& wf, const std::string& stage);

/// Stages ordered so that each comes after all it needs (file order breaks ties).
std::vector<std::string> topological_order(const Workflow& wf);

/// Names of the outputs a stage provides: declared ones plus those of its kind
/// (copy: path, manifest_hash, bytes; eval: tau, reference_tau, speedup).
std::vector<std::string> stage_output_names(const Stage& stage);

}  // namespace ferry::workflow
