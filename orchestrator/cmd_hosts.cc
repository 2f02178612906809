// `ferry hosts check`: what each host of a workflow looks like from here.
#include <iostream>

#include "orchestrator/cli.h"
#include "orchestrator/hosts_check.h"
#include "workflows/parser.h"

namespace ferry::cli {

int cmd_hosts(const Common& c) {
  if (c.help || c.args.size() != 3 || c.args[1] != "check") {
    std::cout << "usage: ferry hosts check WORKFLOW.yaml [--json]\n"
                 "Connects to every host as a run would (host key, auth, agent) and reports agent version,\n"
                 "cores, memory, free disk in the workdir, GPUs, and which hosts reach which.\n";
    return c.help ? kExitOk : kExitUsage;
  }
  auto wf = workflow::load_workflow(c.args[2]);
  if (!wf.ok()) return fail(wf.status());
  nlohmann::json report = check_hosts(*wf, ferry_home(c.db));
  if (c.json) std::cout << report.dump(2) << "\n";
  else std::cout << render_hosts_check(report);
  for (const auto& h : report["hosts"]) {
    if (!h.value("connected", false)) return kExitFailed;
  }
  return kExitOk;
}

}  // namespace ferry::cli
