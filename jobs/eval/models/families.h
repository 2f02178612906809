// The target families the engine runs, as one table (llama.cpp's architecture table,
// src/llama-arch.cpp): each row names the family, the config.json `model_type`s and
// `architectures` that are it, its torch-free config reader (io/<family>_config.h) and
// the factory that loads it as a TargetModel. A config whose model_type is in no row —
// `llama`, `qwen3_5_moe` — is refused by name with the supported list, never read as
// another family. Adding a family is one row here (see jobs/eval/README.md). The table
// is constant; any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/cpu/tensor_ops.h"
#include "jobs/eval/io/decoder_config.h"
#include "jobs/eval/io/load_report.h"
#include "jobs/eval/models/target_model.h"

namespace ferry::eval {

struct TargetFamily {
  const char* name;  // as the report's describe() line starts: "qwen3", "qwen3_5"
  /// model_type at the top level or in text_config (a VLM wrapper's and its backbone's).
  std::vector<std::string> model_types;
  /// Matched only when config.json names no model_type at all.
  std::vector<std::string> architectures;
  /// The config's shared dimensions, read and checked without the weights.
  Result<DecoderConfig> (*read_config)(const std::string& folder);
  Result<std::unique_ptr<TargetModel>> (*load)(const std::string& folder, const ComputeOptions& options,
                                               LoadReport* report);
};

/// Every supported target family, in the order the refusal lists them.
const std::vector<TargetFamily>& target_families();

/// The row for `<folder>/config.json`. Every model_type it names (top level and
/// text_config's) must be in the table; the backbone's (text_config's) picks the row.
/// Otherwise an error naming the file, the model_type and the supported families.
Result<const TargetFamily*> detect_target_architecture(const std::string& folder);

}  // namespace ferry::eval
