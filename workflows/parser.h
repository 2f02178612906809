// The workflow parser: YAML text → Workflow, and the checks that make a workflow
// safe to run. Its files (parser.cc, host_parser.cc, yaml_reader.cc) are the only
// ones that include yaml-cpp.
//
// Every problem is collected (not just the first) and reported as
// `file:line:col: message`: unknown keys (with a did-you-mean), wrong types,
// missing required fields, duplicates, unknown hosts and stages, cycles, and
// templates that reference nothing. Plain functions; any thread.
#pragma once

#include <string>

#include "base/status.h"
#include "workflows/diagnostics.h"
#include "workflows/model.h"

namespace ferry::workflow {

/// Parses and validates `text` (named `path` in messages). On any error returns
/// an InvalidArgument Status whose message lists every diagnostic, one per line.
Result<Workflow> parse_workflow(const std::string& path, const std::string& text);

/// Reads the file, then parse_workflow.
Result<Workflow> load_workflow(const std::string& path);

/// Parses without failing: the diagnostics are returned alongside. For tests and
/// `ferry validate`.
Workflow parse_workflow_collecting(const std::string& path, const std::string& text, Diagnostics* diagnostics);

}  // namespace ferry::workflow
