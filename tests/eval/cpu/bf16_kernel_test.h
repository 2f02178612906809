// Bf16KernelTest: the fixture of the AVX512-BF16 kernels' tests. Each is skipped,
// saying why, on a CPU without the instructions (ctest lists it as Skipped and
// CpuFeaturesTest.TheAvx512Bf16KernelsAreTestedOnThisCpu says so loudly); each runs
// with the kernels on, and turns them back on for the next test if it switched them off.
#pragma once

#include <gtest/gtest.h>

#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/cpu_features.h"

namespace ferry::eval::testing {

class Bf16KernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!bf16_kernel_supported()) GTEST_SKIP() << "this CPU has no AVX512-BF16: libtorch's path is the only one";
    set_bf16_kernel_enabled(true);
  }
  void TearDown() override { set_bf16_kernel_enabled(true); }
};

}  // namespace ferry::eval::testing
