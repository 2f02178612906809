#include "orchestrator/workflow_paths.h"

#include <climits>
#include <cstdlib>

#include "base/file_util.h"

namespace ferry {

std::string resolve_local_path(const std::string& path, const std::string& workflow_path) {
  if (path.empty() || path[0] == '/') return path;
  if (path[0] == '~') {
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "") + path.substr(1);
  }
  char real[PATH_MAX];
  std::string base = dirname_of(workflow_path);
  if (::realpath(base.c_str(), real)) base = real;
  return join_path(base, path);
}

std::string resolve_host_workdir(const workflow::Host& host, const std::string& expanded,
                                 const std::string& workflow_path, const std::string& ferry_home) {
  if (host.transport() != workflow::Transport::kLocal) return expanded.empty() ? ".ferry/work" : expanded;
  if (expanded.empty()) return ferry_home + "/hosts/" + host.name;
  return resolve_local_path(expanded, workflow_path);
}

}  // namespace ferry
