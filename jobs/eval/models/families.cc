#include "jobs/eval/models/families.h"

#include <algorithm>

#include "jobs/eval/io/config_json.h"
#include "jobs/eval/io/qwen35_config.h"
#include "jobs/eval/io/qwen3_config.h"
#include "jobs/eval/models/qwen35_target.h"
#include "jobs/eval/models/qwen3_target.h"
#include "jobs/tokenizer/utf8.h"

namespace ferry::eval {
namespace {

template <typename Model>
Result<std::unique_ptr<TargetModel>> load_as_target(const std::string& folder, const ComputeOptions& options,
                                                    LoadReport* report) {
  auto model = Model::load(folder, options, report);
  if (!model.ok()) return model.status();
  return std::unique_ptr<TargetModel>(std::move(*model));
}

Result<DecoderConfig> read_qwen35_dimensions(const std::string& folder) {
  auto c = load_qwen35_config(folder);
  if (!c.ok()) return c.status();
  return c->text;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const TargetFamily* family_of_model_type(const std::string& model_type) {
  for (const TargetFamily& f : target_families()) {
    if (contains(f.model_types, model_type)) return &f;
  }
  return nullptr;
}

const TargetFamily* family_of_architectures(const std::vector<std::string>& architectures) {
  for (const TargetFamily& f : target_families()) {
    for (const std::string& a : architectures) {
      if (contains(f.architectures, a)) return &f;
    }
  }
  return nullptr;
}

// "qwen3 (model_type qwen3, qwen3_vl, qwen3_vl_text), qwen3_5 (...)"
std::string supported_families() {
  std::string out;
  for (const TargetFamily& f : target_families()) {
    std::string types;
    for (const std::string& t : f.model_types) types += (types.empty() ? "" : ", ") + t;
    out += (out.empty() ? "" : "; ") + std::string(f.name) + " (model_type " + types + ")";
  }
  return out;
}

Status unsupported(const ConfigNames& names, const std::string& what) {
  return invalid_argument(names.path + ": " + what + "; supported target families: " + supported_families());
}

}  // namespace

const std::vector<TargetFamily>& target_families() {
  static const std::vector<TargetFamily> families = {
      {"qwen3",
       {"qwen3", "qwen3_vl", "qwen3_vl_text"},
       {"Qwen3ForCausalLM", "Qwen3VLForConditionalGeneration"},
       load_qwen3_config,
       load_as_target<Qwen3Target>},
      {"qwen3_5",
       {"qwen3_5", "qwen3_5_text"},
       {"Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration"},
       read_qwen35_dimensions,
       load_as_target<Qwen35Target>},
  };
  return families;
}

Result<const TargetFamily*> detect_target_architecture(const std::string& folder) {
  auto names = read_config_names(folder);
  if (!names.ok()) return names.status();
  const TargetFamily* family = nullptr;
  for (const std::string& type : {names->model_type, names->text_model_type}) {
    if (type.empty()) continue;
    family = family_of_model_type(type);
    if (family == nullptr)
      return unsupported(*names, "model_type '" + tokenizer::utf8_shown(type) + "' is not supported");
  }
  if (family != nullptr) return family;  // text_config's, when it names one
  family = family_of_architectures(names->architectures);
  if (family != nullptr) return family;
  return unsupported(*names, "no 'model_type', and no supported family's 'architectures'");
}

}  // namespace ferry::eval
