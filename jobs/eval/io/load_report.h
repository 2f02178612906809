// LoadReport: what loading one model's checkpoint found (files, tensors loaded,
// unused, skipped unread, problems). Filled by WeightLoader, carried by EvalReport.
// Plain value; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ferry::eval {

struct LoadReport {
  std::string what;      // "target", "drafter", "reference drafter"
  std::string location;  // folder or file
  bool sharded = false;
  std::vector<std::string> files_opened;
  int64_t tensors_loaded = 0;
  int64_t tensors_zero_copy = 0;          // used in place from the mapping, no copy (the
                                          // checkpoint's dtype is the compute dtype, on CPU)
  int64_t tensors_repacked = 0;           // BF16 matrices repacked for the kernel (packed_bf16_linear.h),
                                          // each in place of its mapped pages, not beside them
  int64_t bytes_mapped = 0;               // checkpoint bytes of the tensors loaded (file mappings)
  int64_t bytes_copied = 0;               // bytes of converted copies made from them (0 when all are in place)
  std::vector<std::string> unused;        // in the checkpoint, never used (reported, not fatal)
  std::vector<std::string> skipped;       // under a skip prefix (vision, mtp); never read
  int64_t skipped_count = 0;              // a report read back from JSON: how many (the names are not kept)

  int64_t skipped_total() const { return skipped.empty() ? skipped_count : static_cast<int64_t>(skipped.size()); }
  std::vector<std::string> problems;      // missing / shape / dtype; fatal
  std::vector<std::string> source_dtypes; // distinct dtypes of the tensors loaded
};

}  // namespace ferry::eval
