// libtorch helpers shared by the eval tests that compare tensors: reading a checkpoint
// whole in double precision for naive references, relative error, greedy decoding.
// Test-only; gtest expectations record read failures.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "jobs/eval/models/target_model.h"

namespace ferry::eval::testing {

using Weights = std::map<std::string, at::Tensor>;

/// Every tensor of the checkpoint under `folder` as float64, keyed by name with
/// `strip_prefix` removed where present.
Weights read_weights(const std::string& folder, const std::string& strip_prefix = "");

/// max |got - want| / max |want|, in double.
double relative_error(const at::Tensor& got, const at::Tensor& want);

/// Standard normal values [rows, cols] from `seed`, rounded to BF16.
at::Tensor bf16_randn(int64_t rows, int64_t cols, int64_t seed);

at::Tensor ids_tensor(const std::vector<int64_t>& ids);

/// f()'s result with a family of CPU kernels off (`set_enabled`: set_bf16_kernel_enabled,
/// set_small_f32_enabled), libtorch's own, to hold the kernels' against; they are on after.
template <typename F>
at::Tensor with_kernels_off(void (*set_enabled)(bool), F f) {
  set_enabled(false);
  at::Tensor out = f();
  set_enabled(true);
  return out;
}

/// Plain greedy decoding (block size 1) of n tokens through the speculative loop.
std::vector<int64_t> greedy(TargetModel* target, const std::vector<int64_t>& prompt, int n);

}  // namespace ferry::eval::testing
