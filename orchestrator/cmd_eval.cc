// `ferry eval`: the drafter eval engine standalone (jobs/eval/).
#include <iostream>

#include "orchestrator/cli.h"
#ifdef FERRY_WITH_TORCH
#include "jobs/eval/eval_runner.h"
#endif

namespace ferry::cli {

int cmd_eval(int argc, char** argv) {
#ifdef FERRY_WITH_TORCH
  return ferry::eval::eval_command_main(argc, argv);
#else
  std::cerr << "ferry eval: this ferry was built without libtorch (FERRY_WITH_TORCH=OFF)\n";
  return kExitUsage;
#endif
}

}  // namespace ferry::cli
