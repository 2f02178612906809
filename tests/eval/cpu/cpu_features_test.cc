// The one CPU-feature reader (cpu_features.h) against the Linux kernel's own reading,
// /proc/cpuinfo's flags: the kernels' dispatch, the load report and `ferry-eval check`
// all ask cpu_features(), so it must agree with what the OS says the CPU runs.
#include "jobs/eval/cpu/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace ferry::eval {
namespace {

std::set<std::string> proc_cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(CpuFeaturesTest, AgreesWithTheKernelsProcCpuinfo) {
  const std::set<std::string> flags = proc_cpuinfo_flags();
  ASSERT_FALSE(flags.empty()) << "no flags line in /proc/cpuinfo";
  std::set<std::string> want;
  for (const char* f : {"avx2", "avx512f", "avx512_bf16", "amx_bf16"}) {
    if (flags.count(f) != 0) want.insert(f);
  }
  const std::vector<std::string> got = isa_flags();
  EXPECT_EQ(std::set<std::string>(got.begin(), got.end()), want) << "isa_summary: " << isa_summary();
  const bool kernels = flags.count("avx512f") && flags.count("avx512bw") && flags.count("avx512vl") &&
                       flags.count("avx512_bf16");
  EXPECT_EQ(bf16_kernel_supported(), kernels);
}

TEST(CpuFeaturesTest, TheSummaryNamesWhatTheKernelsNeed) {
  const std::string s = isa_summary();
  EXPECT_EQ(s.find("BF16)") != std::string::npos, cpu_features().avx512bf16) << s;
  EXPECT_EQ(s.rfind("AVX-512 (F", 0) == 0, cpu_features().avx512f) << s;
}

// Says so in ctest's summary ("Skipped") where the AVX512-BF16 kernels cannot be tested:
// every kernel test here then skips, and a green run would otherwise look complete.
TEST(CpuFeaturesTest, TheAvx512Bf16KernelsAreTestedOnThisCpu) {
  if (!bf16_kernel_supported()) {
    GTEST_SKIP() << "NOT TESTED: this CPU (" << isa_summary()
                 << ") has no AVX512-BF16, so every BF16 kernel test skips; run them on one that has it";
  }
  SUCCEED() << isa_summary();
}

}  // namespace
}  // namespace ferry::eval
