// The command line both trainers share: the training loop's sizes and schedule
// (--steps, --quick, --batch, --seq-len, --lr, --seed, --save-every, --threads),
// --help, and one loop over argv that hands each trainer's own flags to it.
// Torch-free.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace ferry::dflash_tiny {

struct TrainFlags {
  long steps = 0, batch = 8, seq_len = 96, save_every = 0, threads = 1;  // a trainer sets steps and save_every
  double lr = 0;
  unsigned long long seed = 0;
};

/// A trainer's own flag and its value; false when the flag is not one of its own.
using OwnFlag = std::function<bool(const std::string& flag, const std::string& value)>;

/// Reads argv into `flags` (whose defaults the caller set) and, flag by flag, into
/// `own`. Returns -1 to go on, or the exit code to stop with: 0 after --help printed
/// `usage`, 2 after an unknown flag or a missing value was said on stderr.
int read_train_flags(int argc, char** argv, const char* program, const char* usage, TrainFlags* flags,
                     const OwnFlag& own);

/// Says "<program>: <msg>" on stderr; returns 2, a trainer's exit code for bad input.
int train_fail(const char* program, const std::string& msg);

double seconds_since(std::chrono::steady_clock::time_point t0);

}  // namespace ferry::dflash_tiny
