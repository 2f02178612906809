// WeightLoader: takes a model's parameters out of a SafetensorsCheckpoint by name and
// shape, converting to the compute dtype/device (zero-copy from the mapping when they
// already match: F32 on CPU). It records every tensor missing, of the wrong shape or of
// an unusable dtype, and at finish() every checkpoint tensor never taken; finish()
// fails if anything was missing or wrong, so a half-loaded model never runs.
// Tensors under skip prefixes (a VLM's vision tower, an MTP head) are neither read
// nor reported as unused. One loader per model load, on one thread.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/io/load_report.h"
#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/cpu/tensor_ops.h"

namespace ferry::eval {

class WeightLoader {
 public:
  WeightLoader(SafetensorsCheckpoint* checkpoint, std::string what, ComputeOptions options);

  /// The tensor `name` with `shape`, or an undefined tensor (the problem is recorded).
  at::Tensor take(const std::string& name, const std::vector<int64_t>& shape);
  /// take() for a matrix used only as project()'s w: repacked for the BF16 kernel where
  /// bf16_weight_packable() (the checkpoint's pages of it then leave the process, so the
  /// weights stay one copy), as take() returns it otherwise.
  /// With `padded`, a matrix of any row count is packed (pack_bf16_weight(): the
  /// caller narrows project()'s columns to shape[0]).
  at::Tensor take_linear(const std::string& name, const std::vector<int64_t>& shape, bool padded = false);
  /// Like take(), but always float32 on the compute device (small parameters that the
  /// model keeps in full precision whatever the compute dtype: decay rates, norms).
  at::Tensor take_float32(const std::string& name, const std::vector<int64_t>& shape);
  /// Whether the checkpoint has `name` (no data read).
  bool has(const std::string& name) const { return checkpoint_->contains(name); }
  /// Marks a present tensor as deliberately ignored (e.g. lm_head of a tied model).
  void ignore(const std::string& name);
  /// The output head [vocab, hidden]: the embedding table itself when the config ties
  /// them (a stray lm_head.weight is then ignored, not reported unused), else lm_head.weight,
  /// packed even where vocab is not a multiple of 16 (project(x, head) may then have up
  /// to 15 more columns than vocab: narrow it).
  at::Tensor take_lm_head(const at::Tensor& embed_tokens, bool tied, int64_t vocab, int64_t hidden);

  /// Fails with every problem listed if any take() failed; fills `report` (may be null).
  Status finish(const std::vector<std::string>& skip_prefixes, LoadReport* report);

 private:
  SafetensorsCheckpoint* checkpoint_;
  std::string what_;
  ComputeOptions options_;
  std::vector<std::string> taken_;
  std::vector<std::string> ignored_;
  LoadReport report_;
};

/// A checkpoint record as a tensor of its own dtype, sharing the mapped bytes.
Result<at::Tensor> tensor_from_record(const TensorRecord& record);

}  // namespace ferry::eval
