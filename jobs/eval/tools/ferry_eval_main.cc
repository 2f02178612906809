// ferry-eval: `ferry eval` as a standalone binary, for engine development without the
// rest of ferry. Same flags and exit codes (jobs/eval/run/eval_command.h).
// `ferry-eval worker` and `ferry-eval check`: the eval worker that runs on a host
// holding the model (jobs/eval/tools/eval_worker.h).
#include <cstring>
#include <string>
#include <vector>

#include "jobs/eval/run/eval_command.h"
#include "jobs/eval/tools/eval_worker.h"
#include "jobs/eval/tools/passive_omp_wait.h"

int main(int argc, char** argv) {
  ferry::eval::reexec_with_passive_omp_wait(argv);
  if (argc == 2 && std::strcmp(argv[1], "worker") == 0) return ferry::eval::eval_worker_main();
  if (argc == 2 && std::strcmp(argv[1], "check") == 0) return ferry::eval::eval_check_main();
  std::vector<char*> args;
  static char eval_name[] = "eval";
  args.push_back(eval_name);
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  return ferry::eval::eval_command_main(static_cast<int>(args.size()), args.data());
}
