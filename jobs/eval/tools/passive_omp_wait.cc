#include "jobs/eval/tools/passive_omp_wait.h"

#include <unistd.h>

#include <cstdlib>

namespace ferry::eval {

void reexec_with_passive_omp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (::setenv("OMP_WAIT_POLICY", "passive", 0) != 0) return;
  ::execv("/proc/self/exe", argv);
  ::unsetenv("OMP_WAIT_POLICY");  // exec failed: run on as we are
}

}  // namespace ferry::eval
