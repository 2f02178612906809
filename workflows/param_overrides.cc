#include "workflows/param_overrides.h"

#include <vector>

#include "workflows/diagnostics.h"

namespace ferry::workflow {

Status apply_param_overrides(Workflow* wf, const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> names;
  for (const auto& p : wf->params) names.push_back(p.name);
  for (const auto& [k, v] : overrides) {
    bool found = false;
    for (auto& p : wf->params) {
      if (p.name == k) {
        p.default_value = v;
        found = true;
      }
    }
    if (!found) {
      std::string hint = did_you_mean(k, names);
      return invalid_argument("-p " + k + ": workflow '" + wf->name + "' has no param '" + k + "'" +
                              (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    }
  }
  return Status();
}

}  // namespace ferry::workflow
