// `ferry hosts check`: what each host of a workflow looks like from here.
#include <iostream>

#include "orchestrator/cli.h"
#include "orchestrator/hosts/hosts_check.h"
#include "workflows/parser.h"

namespace ferry::cli {

int cmd_hosts_check(const Common& c, const FileOptions& o) {
  auto wf = workflow::load_workflow(o.workflow);
  if (!wf.ok()) return fail(wf.status());
  nlohmann::json report = check_hosts(*wf, ferry_home(c.db));
  if (o.json) std::cout << report.dump(2) << "\n";
  else std::cout << render_hosts_check(report);
  for (const auto& h : report["hosts"]) {
    if (!h.value("connected", false)) return kExitFailed;
    // A Slurm host whose sinfo fails, or a stage naming a partition the cluster lacks.
    if (h.contains("slurm") && (!h["slurm"].value("ok", false) || !h["slurm"]["unknown_partitions"].empty())) {
      return kExitFailed;
    }
  }
  return kExitOk;
}

}  // namespace ferry::cli
