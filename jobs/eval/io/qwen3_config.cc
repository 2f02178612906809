#include "jobs/eval/io/qwen3_config.h"

#include <nlohmann/json.hpp>

#include "jobs/eval/io/config_json.h"

namespace ferry::eval {
namespace {

using nlohmann::json;

// Qwen3 targets: every layer full attention, no sliding window.
Status check_full_attention_only(const json& j, const std::string& path, int64_t num_layers) {
  if (j.contains("use_sliding_window") && j["use_sliding_window"] == true) {
    return invalid_argument(path + ": 'use_sliding_window' true is not supported");
  }
  return layer_kinds(j, path, {"full_attention"}, num_layers).status();
}

}  // namespace

Result<DecoderConfig> load_qwen3_config(const std::string& folder) {
  const std::string path = folder + "/config.json";
  auto j = read_json(path);
  if (!j.ok()) return j.status();
  DecoderConfig c;
  auto text = read_backbone_config(*j, path, &c);
  if (!text.ok()) return text.status();
  FERRY_RETURN_IF_ERROR(check_full_attention_only(**text, path, c.num_hidden_layers));
  // A vision tower beside a top-level text config: its tensors are skipped unread too.
  if (j->contains("vision_config")) c.vlm_wrapped = true;
  return c;
}

}  // namespace ferry::eval
