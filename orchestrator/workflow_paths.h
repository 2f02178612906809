// Where a workflow's paths land on the coordinator and in each host: one rule
// for the scheduler and `ferry hosts check`, so both reach the same workdir.
#pragma once

#include <string>

#include "workflows/model.h"

namespace ferry {

/// A coordinator path of the workflow (keep_local, eval inputs, local workdirs):
/// absolute as given, `~/` from $HOME, else relative to the workflow file's folder.
std::string resolve_local_path(const std::string& path, const std::string& workflow_path);

/// A host's workdir from its (template-expanded) setting: remote (ssh) hosts default to
/// `.ferry/work` under the remote home and keep relative paths for the agent to
/// resolve there; local hosts default to `<ferry_home>/hosts/NAME`.
std::string resolve_host_workdir(const workflow::Host& host, const std::string& expanded,
                                 const std::string& workflow_path, const std::string& ferry_home);

}  // namespace ferry
