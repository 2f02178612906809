// `ferry eval`: the drafter eval engine standalone, through the eval plugin.
#include <iostream>

#include "jobs/eval/stage/eval_plugin.h"
#include "orchestrator/cli.h"

namespace ferry::cli {

int cmd_eval(int argc, char** argv) {
  auto plugin = load_eval_plugin();
  if (!plugin.ok()) {
    std::cerr << "ferry eval: " << plugin.status().message() << "\n";
    return kExitUsage;
  }
  return (*plugin)->main(argc, argv);
}

}  // namespace ferry::cli
