// What this CPU and its OS can run, read once with cpuid and xgetbv: the one reader
// the kernels' dispatch, the engine's load report and `ferry-eval check` all ask, so
// they cannot disagree (a feature counts only when the OS also saves its state).
#pragma once

#include <string>
#include <vector>

// Compiles a function for AVX-512 with BF16 whatever the build's -march; such a
// function runs only after bf16_kernel_supported() said yes.
#define FERRY_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

namespace ferry::eval {

struct CpuFeatures {
  bool avx = false;          // with the OS saving the AVX state
  bool avx2 = false;
  bool avx512f = false;      // with the OS saving the AVX-512 state
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool amx = false;          // with the OS saving the AMX tile state
  bool amx_bf16 = false;
};

/// This machine's features, read on first call.
const CpuFeatures& cpu_features();

/// Whether the AVX512-BF16 kernels run here (F, BW, VL and BF16, with the OS's state).
bool bf16_kernel_supported();

/// One line for people: "AVX-512 (F, BW, VL, VNNI, BF16), AMX-BF16".
std::string isa_summary();

/// The features as /proc/cpuinfo names them, of those ferry reports:
/// avx2, avx512f, avx512_bf16, amx_bf16.
std::vector<std::string> isa_flags();

}  // namespace ferry::eval
