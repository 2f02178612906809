#include "tests/fuzz/fuzz_rounds.h"

#include <cstdio>
#include <string>

namespace ferry::fuzz {

void expect_outcomes(const FuzzPlan& plan, const char* what, std::initializer_list<Outcome> outcomes) {
  std::string line = std::string(what) + ":";
  for (const Outcome& o : outcomes) {
    if (full_run(plan) && o.full_run_floor > 0) {
      EXPECT_GT(o.count, o.full_run_floor) << what << " " << o.name;
    }
    line += std::string(line.back() == ':' ? " " : ", ") + o.name + " " + std::to_string(o.count);
  }
  std::printf("%s\n", line.c_str());
}

}  // namespace ferry::fuzz
