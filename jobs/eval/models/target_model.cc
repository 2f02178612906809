#include "jobs/eval/models/target_model.h"

#include "jobs/eval/cpu/small_block_cache.h"
#include "jobs/eval/models/families.h"

#include <algorithm>

namespace ferry::eval {

TargetModel::Output prefill(TargetModel* target, const at::Tensor& ids, const std::vector<int64_t>& capture) {
  const int64_t n = ids.size(0);
  if (n <= kPrefillChunk) return target->forward(ids, capture, /*logits_rows=*/1);
  TargetModel::Output out;
  std::vector<at::Tensor> features;
  for (int64_t begin = 0; begin < n; begin += kPrefillChunk) {
    const int64_t count = std::min(kPrefillChunk, n - begin);
    TargetModel::Output chunk = target->forward(ids.narrow(0, begin, count), capture, /*logits_rows=*/1);
    if (chunk.features.defined()) features.push_back(chunk.features);
    out.logits = chunk.logits;
  }
  if (!features.empty()) out.features = at::cat(features, 0);
  return out;
}

Result<std::unique_ptr<TargetModel>> load_target(const std::string& folder, const ComputeOptions& options,
                                                 LoadReport* report) {
  use_small_block_cache();  // every eval loads its target first
  auto family = detect_target_architecture(folder);
  if (!family.ok()) return family.status();
  return (*family)->load(folder, options, report);
}

}  // namespace ferry::eval
