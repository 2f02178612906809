// `ferry hosts check`: what each host of a workflow looks like from here.
#include <iostream>

#include "orchestrator/cli.h"

namespace ferry::cli {

int cmd_hosts(const Common& c) {
  std::cerr << "ferry hosts: not available in this build yet\n";
  return kExitUsage;
}

}  // namespace ferry::cli
