#include "examples/dflash-tiny/train_flags.h"

#include <cstdio>
#include <cstdlib>

namespace ferry::dflash_tiny {

int read_train_flags(int argc, char** argv, const char* program, const char* usage, TrainFlags* flags,
                     const OwnFlag& own) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (a == "--quick") {
      flags->steps = 40;
      continue;
    }
    if (i + 1 >= argc) return train_fail(program, "missing value after " + a + "\n" + usage);
    const std::string v = argv[++i];
    const long n = std::atol(v.c_str());
    if (a == "--steps") flags->steps = n;
    else if (a == "--batch") flags->batch = n;
    else if (a == "--seq-len") flags->seq_len = n;
    else if (a == "--lr") flags->lr = std::atof(v.c_str());
    else if (a == "--seed") flags->seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--save-every") flags->save_every = n;
    else if (a == "--threads") flags->threads = n;
    else if (!own(a, v)) return train_fail(program, "unknown flag " + a + "\n" + usage);
  }
  return -1;
}

int train_fail(const char* program, const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n", program, msg.c_str());
  return 2;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace ferry::dflash_tiny
