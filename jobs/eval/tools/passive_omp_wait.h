// For programs linked against libtorch: libgomp reads OMP_WAIT_POLICY once, before
// main, and its default spins threads after every parallel region; a decode step runs
// hundreds of small ones, and on a busy host the spinning threads take the CPUs from
// the working ones (see jobs/eval/README.md, "Threads"). `ferry` sets the policy before
// it loads the eval plugin (jobs/eval/stage/eval_plugin.cc); standalone tools call this first
// thing in main. Torch-free; call before any other thread exists.
#pragma once

namespace ferry::eval {

/// Unless OMP_WAIT_POLICY is set, re-executes this program (/proc/self/exe, same
/// argv) with OMP_WAIT_POLICY=passive. Returns when it is already set or exec failed.
void reexec_with_passive_omp_wait(char** argv);

}  // namespace ferry::eval
