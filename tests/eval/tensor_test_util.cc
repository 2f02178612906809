#include "tests/eval/tensor_test_util.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/run/speculative_decoder.h"
#include "jobs/eval/io/weight_loader.h"

namespace ferry::eval::testing {

Weights read_weights(const std::string& folder, const std::string& strip_prefix) {
  Weights w;
  auto ckpt = SafetensorsCheckpoint::open(folder);
  EXPECT_TRUE(ckpt.ok()) << ckpt.status().message();
  if (!ckpt.ok()) return w;
  for (const std::string& name : (*ckpt)->names()) {
    auto rec = (*ckpt)->read(name);
    EXPECT_TRUE(rec.ok()) << rec.status().message();
    if (!rec.ok()) continue;
    const bool strip = !strip_prefix.empty() && name.rfind(strip_prefix, 0) == 0;
    w[strip ? name.substr(strip_prefix.size()) : name] = tensor_from_record(*rec).value().to(at::kDouble).clone();
  }
  return w;
}

double relative_error(const at::Tensor& got, const at::Tensor& want) {
  at::Tensor g = got.to(at::kDouble), w = want.to(at::kDouble);
  return (g - w).abs().max().item<double>() / std::max(w.abs().max().item<double>(), 1e-30);
}

at::Tensor bf16_randn(int64_t rows, int64_t cols, int64_t seed) {
  at::manual_seed(seed);
  return at::randn({rows, cols}).to(at::kBFloat16);
}

at::Tensor ids_tensor(const std::vector<int64_t>& ids) { return at::tensor(ids, at::kLong); }

std::vector<int64_t> greedy(TargetModel* target, const std::vector<int64_t>& prompt, int n) {
  DecodeOptions o;
  o.block_size = 1;
  o.max_new_tokens = n;
  auto r = speculative_decode(target, nullptr, prompt, o);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->tokens : std::vector<int64_t>();
}

}  // namespace ferry::eval::testing
