// Writes Hugging Face safetensors checkpoints from float data: one file, or shards
// plus model.safetensors.index.json. Used by the tiny-model generator and tests; the
// eval engine itself only reads. Values are converted to the requested dtype
// (F32, F16, BF16) with round-to-nearest-even. Plain functions; any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/io/safetensors_reader.h"

namespace ferry::eval {

struct WriteTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;  // row-major, numel(shape) values
  /// Overrides the checkpoint-wide dtype for this tensor ("" = use it).
  std::string dtype;
  /// When set (and `values` empty): produces values [begin, begin + count) on demand, so
  /// a big tensor is written chunk by chunk without ever being held whole.
  std::function<void(int64_t begin, int64_t count, float* out)> fill;

  int64_t numel() const;
};

struct WriteOptions {
  std::string dtype = "F32";  // F32 | F16 | BF16
  int shards = 0;             // 0 = single model.safetensors; N >= 1 = N shards + index
  std::map<std::string, std::string> metadata{{"format", "pt"}};
};

/// Writes `tensors` into `folder` (created if needed). Tensors are laid out in the
/// given order; shards split that order into contiguous runs of similar byte size.
Status write_safetensors_checkpoint(const std::string& folder, const std::vector<WriteTensor>& tensors,
                                    const WriteOptions& options);

/// Writes one .safetensors file.
Status write_safetensors_file(const std::string& path, const std::vector<const WriteTensor*>& tensors,
                              const std::string& dtype, const std::map<std::string, std::string>& metadata);

}  // namespace ferry::eval
