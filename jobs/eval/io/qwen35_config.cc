#include "jobs/eval/io/qwen35_config.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "jobs/eval/io/config_json.h"

namespace ferry::eval {
namespace {

using nlohmann::json;

// Per layer linear or full, from layer_types, or by Hugging Face's rule without them:
// every full_attention_interval-th layer is full attention.
Status read_layer_mix(const json& text, const std::string& path, Qwen35Config* c) {
  const int64_t layers = c->text.num_hidden_layers;
  auto kinds = layer_kinds(text, path, {"linear_attention", "full_attention"}, layers);
  if (!kinds.ok()) return kinds.status();
  if (!kinds->empty()) {
    for (size_t k : *kinds) c->linear_layer.push_back(k == 0);
    return Status();
  }
  int64_t interval = 4;
  FERRY_RETURN_IF_ERROR(get_int(text, path, "full_attention_interval", &interval, false));
  if (interval <= 0) return invalid_argument(path + ": 'full_attention_interval' must be positive");
  for (int64_t i = 0; i < layers; ++i) c->linear_layer.push_back((i + 1) % interval != 0);
  return Status();
}

Status read_partial_rotary(const json& text, const std::string& path, Qwen35Config* c) {
  const json* rope =
      text.contains("rope_parameters") && text["rope_parameters"].is_object() ? &text["rope_parameters"] : nullptr;
  const json* factor = nullptr;
  if (rope != nullptr && rope->contains("partial_rotary_factor")) {
    factor = &(*rope)["partial_rotary_factor"];
  } else if (text.contains("partial_rotary_factor")) {
    factor = &text["partial_rotary_factor"];
  }
  if (factor != nullptr) {
    if (!factor->is_number()) return invalid_argument(path + ": 'partial_rotary_factor' must be a number");
    c->partial_rotary_factor = factor->get<double>();
  }
  const int64_t head_dim = c->text.head_dim;
  c->rotary_dim = static_cast<int64_t>(static_cast<double>(head_dim) * c->partial_rotary_factor);
  if (!(c->partial_rotary_factor > 0) || c->rotary_dim <= 0 || c->rotary_dim > head_dim || c->rotary_dim % 2 != 0) {
    return invalid_argument(path + ": 'partial_rotary_factor' " + std::to_string(c->partial_rotary_factor) +
                            " gives rotary dim " + std::to_string(c->rotary_dim) + " of head_dim " +
                            std::to_string(head_dim) + "; it must be even and positive");
  }
  return Status();
}

// The Gated DeltaNet layers' sizes; value heads read key head h / (Hv / Hk).
Status read_linear_dims(const json& text, const std::string& path, Qwen35Config* c) {
  FERRY_RETURN_IF_ERROR(get_positive(text, path, "linear_num_key_heads", &c->linear_num_key_heads, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_positive(text, path, "linear_num_value_heads", &c->linear_num_value_heads, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_positive(text, path, "linear_key_head_dim", &c->linear_key_head_dim, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_positive(text, path, "linear_value_head_dim", &c->linear_value_head_dim, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_int(text, path, "linear_conv_kernel_dim", &c->linear_conv_kernel_dim, false));
  if (c->linear_conv_kernel_dim < 1) return invalid_argument(path + ": 'linear_conv_kernel_dim' must be positive");
  FERRY_RETURN_IF_ERROR(check_at_most(path, "linear_conv_kernel_dim", c->linear_conv_kernel_dim, kMaxWidth));
  if (c->linear_num_value_heads % c->linear_num_key_heads != 0) {
    return invalid_argument(path + ": linear_num_value_heads (" + std::to_string(c->linear_num_value_heads) +
                            ") must be a multiple of linear_num_key_heads (" + std::to_string(c->linear_num_key_heads) +
                            ")");
  }
  return Status();
}

}  // namespace

int64_t Qwen35Config::num_linear_layers() const {
  return static_cast<int64_t>(std::count(linear_layer.begin(), linear_layer.end(), true));
}

std::string Qwen35Config::describe() const {
  const int64_t linear = num_linear_layers();
  return "qwen3_5: " + std::to_string(linear) + " linear + " + std::to_string(text.num_hidden_layers - linear) +
         " full attention";
}

Result<Qwen35Config> load_qwen35_config(const std::string& folder) {
  const std::string path = folder + "/config.json";
  auto j = read_json(path);
  if (!j.ok()) return j.status();
  Qwen35Config c;
  auto backbone = read_backbone_config(*j, path, &c.text);
  if (!backbone.ok()) return backbone.status();
  const json* text = *backbone;
  FERRY_RETURN_IF_ERROR(read_layer_mix(*text, path, &c));
  FERRY_RETURN_IF_ERROR(read_partial_rotary(*text, path, &c));
  FERRY_RETURN_IF_ERROR(read_linear_dims(*text, path, &c));
  if (text->contains("num_experts") && (*text)["num_experts"].is_number_integer() &&
      (*text)["num_experts"].get<int64_t>() > 0) {
    return invalid_argument(path + ": 'num_experts' > 0 (mixture-of-experts) is not supported");
  }
  for (const char* key : {"image_token_id", "video_token_id", "vision_start_token_id"}) {
    if (j->contains(key) && (*j)[key].is_number_integer()) c.vision_token_ids.push_back((*j)[key].get<int64_t>());
  }
  return c;
}

}  // namespace ferry::eval
