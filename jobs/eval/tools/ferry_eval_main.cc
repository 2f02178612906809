// ferry-eval: `ferry eval` as a standalone binary, for engine development without the
// rest of ferry. Same flags and exit codes (jobs/eval/eval_command.h).
#include <string>
#include <vector>

#include "jobs/eval/eval_command.h"
#include "jobs/eval/tools/passive_omp_wait.h"

int main(int argc, char** argv) {
  ferry::eval::reexec_with_passive_omp_wait(argv);
  std::vector<char*> args;
  static char eval_name[] = "eval";
  args.push_back(eval_name);
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  return ferry::eval::eval_command_main(static_cast<int>(args.size()), args.data());
}
