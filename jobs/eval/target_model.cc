#include "jobs/eval/target_model.h"

#include "jobs/eval/qwen35_target.h"
#include "jobs/eval/qwen3_target.h"

namespace ferry::eval {

Result<std::unique_ptr<TargetModel>> load_target(const std::string& folder, const ComputeOptions& options,
                                                 LoadReport* report) {
  auto arch = detect_target_architecture(folder);
  if (!arch.ok()) return arch.status();
  if (*arch == "qwen3_5") {
    auto t = Qwen35Target::load(folder, options, report);
    if (!t.ok()) return t.status();
    return std::unique_ptr<TargetModel>(std::move(*t));
  }
  auto t = Qwen3Target::load(folder, options, report);
  if (!t.ok()) return t.status();
  return std::unique_ptr<TargetModel>(std::move(*t));
}

}  // namespace ferry::eval
