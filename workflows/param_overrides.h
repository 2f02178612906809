// `-p NAME=VALUE` on the command line: a workflow's params given new defaults before
// it runs. Pure; any thread.
#pragma once

#include <map>
#include <string>

#include "base/status.h"
#include "workflows/model.h"

namespace ferry::workflow {

/// Applies `-p k=v` overrides; unknown names are errors (with a did-you-mean).
Status apply_param_overrides(Workflow* workflow, const std::map<std::string, std::string>& overrides);

}  // namespace ferry::workflow
