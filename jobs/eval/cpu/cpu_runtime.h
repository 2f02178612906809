// CpuRuntime: what the eval's arithmetic runs on — which BLAS libtorch's float32
// matmuls actually call (found from the loaded objects, not from what the package
// manager says), the CPU's vector extensions, and the intra-op thread count — so a
// report can say why a run is slow. Detection reads the process's loaded libraries
// (dladdr/dlsym) and cpuid; it loads nothing new. configure_threads() sets libtorch's
// process-wide pool (and OpenBLAS's own pool, when it has one) and is meant to be
// called once per eval, on the eval's thread.
#pragma once

#include <string>

namespace ferry::eval {

struct BlasInfo {
  std::string library;    // real path of the object providing the sgemm_ libtorch calls
  std::string name;       // "OpenBLAS 0.3.21 ... Cooperlake", "reference (netlib)", ...
  std::string threading;  // "openmp", "pthreads", "sequential", "" when unknown
  bool reference = false; // the unoptimized netlib BLAS: float32 matmuls are slow
  /// One sentence to print when `reference`: what is wrong and the fix.
  std::string advice() const;
};

struct CpuRuntime {
  BlasInfo blas;
  std::string isa;  // "AVX-512 (F, BW, VL, BF16, VNNI)", "AVX2", plus "AMX-BF16" where present
  int threads = 0;  // libtorch intra-op threads in effect
  int cores = 0;    // CPUs this process may run on
};

/// CPUs in this process's affinity mask (cgroup/taskset aware), at least 1.
int available_cores();

/// Sets libtorch's intra-op threads (and OpenBLAS's, when it keeps its own pool) to
/// `requested`, or to available_cores() when requested <= 0. Returns the count set.
int configure_threads(int requested);

/// Inspects the loaded BLAS, the CPU and the thread count now in effect.
CpuRuntime probe_cpu_runtime();

/// The BLAS function `name` (e.g. "sgemv_") as libtorch_cpu's own calls bind to it
/// (looked up through libtorch_cpu's dependency order), or null.
void* libtorch_blas_symbol(const char* name);

}  // namespace ferry::eval
