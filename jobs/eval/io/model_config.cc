#include "jobs/eval/io/model_config.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/json_depth.h"
#include "jobs/tokenizer/utf8.h"

namespace ferry::eval {
namespace {

using nlohmann::json;

// Bounds on what a config.json may ask for: far past every real model (Qwen3.5-397B has
// 60 layers, hidden 4096; vocabularies reach 262k), and short of the sizes whose tables
// alone would fill memory or whose loops would run for hours before a weight is read.
constexpr size_t kMaxConfigBytes = 16 << 20;  // real ones are a few KiB
constexpr int64_t kMaxLayers = 1024;          // num_hidden_layers, num_target_layers
constexpr int64_t kMaxBlockSize = 1024;       // a DFlash block (real: 16)
constexpr int64_t kMaxVocab = 1 << 24;        // the tokenizer's id bound too
constexpr int64_t kMaxWidth = 1 << 20;        // hidden and intermediate sizes, heads, head dims

Result<json> read_json(const std::string& path) {
  auto text = read_file(path, kMaxConfigBytes);
  if (!text.ok()) return text.status();
  FERRY_RETURN_IF_ERROR(check_json_depth(*text, path));
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument(path + ": invalid JSON");
  if (!j.is_object()) return invalid_argument(path + ": expected a JSON object");
  return j;
}

Status get_int(const json& j, const std::string& path, const char* key, int64_t* out, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    return required ? invalid_argument(path + ": missing '" + key + "'") : Status();
  }
  if (!j[key].is_number_integer()) return invalid_argument(path + ": '" + key + "' must be an integer");
  *out = j[key].get<int64_t>();
  return Status();
}

Status check_at_most(const std::string& path, const char* key, int64_t value, int64_t max) {
  if (value <= max) return Status();
  return invalid_argument(path + ": '" + key + "' is " + std::to_string(value) + "; at most " + std::to_string(max) +
                          " is supported");
}

Status get_positive(const json& j, const std::string& path, const char* key, int64_t* out, int64_t max) {
  FERRY_RETURN_IF_ERROR(get_int(j, path, key, out, true));
  if (*out <= 0) return invalid_argument(path + ": '" + key + "' must be positive");
  return check_at_most(path, key, *out, max);
}

Status parse_qwen3(const json& j, const std::string& path, Qwen3Config* c) {
  c->path = path;
  if (j.contains("model_type") && j["model_type"].is_string()) c->model_type = j["model_type"].get<std::string>();
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "hidden_size", &c->hidden_size, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "intermediate_size", &c->intermediate_size, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "num_hidden_layers", &c->num_hidden_layers, kMaxLayers));
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "num_attention_heads", &c->num_attention_heads, kMaxWidth));
  c->num_key_value_heads = c->num_attention_heads;
  FERRY_RETURN_IF_ERROR(get_int(j, path, "num_key_value_heads", &c->num_key_value_heads, false));
  FERRY_RETURN_IF_ERROR(get_int(j, path, "vocab_size", &c->vocab_size, false));
  FERRY_RETURN_IF_ERROR(check_at_most(path, "vocab_size", c->vocab_size, kMaxVocab));
  c->head_dim = c->hidden_size / c->num_attention_heads;
  FERRY_RETURN_IF_ERROR(get_int(j, path, "head_dim", &c->head_dim, false));
  FERRY_RETURN_IF_ERROR(check_at_most(path, "head_dim", c->head_dim, kMaxWidth));
  if (c->num_key_value_heads <= 0 || c->num_attention_heads % c->num_key_value_heads != 0) {
    return invalid_argument(path + ": num_attention_heads (" + std::to_string(c->num_attention_heads) +
                            ") must be a multiple of num_key_value_heads (" +
                            std::to_string(c->num_key_value_heads) + ")");
  }
  if (c->head_dim <= 0 || c->head_dim % 2 != 0) {
    return invalid_argument(path + ": 'head_dim' must be positive and even");
  }
  if (j.contains("rms_norm_eps")) {
    if (!j["rms_norm_eps"].is_number()) return invalid_argument(path + ": 'rms_norm_eps' must be a number");
    c->rms_norm_eps = j["rms_norm_eps"].get<double>();
  }
  const json* rope = nullptr;
  if (j.contains("rope_parameters") && j["rope_parameters"].is_object()) rope = &j["rope_parameters"];
  if (j.contains("rope_theta")) {
    if (!j["rope_theta"].is_number()) return invalid_argument(path + ": 'rope_theta' must be a number");
    c->rope_theta = j["rope_theta"].get<double>();
  } else if (rope != nullptr && rope->contains("rope_theta") && (*rope)["rope_theta"].is_number()) {
    c->rope_theta = (*rope)["rope_theta"].get<double>();
  }
  auto check_rope_type = [&](const json& r, const char* key) -> Status {
    if (!r.is_object()) return Status();
    std::string type = r.value("rope_type", r.value("type", std::string("default")));
    if (type != "default") {
      return invalid_argument(path + ": '" + key + "' of type '" + type + "' is not supported (default RoPE only)");
    }
    return Status();
  };
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    FERRY_RETURN_IF_ERROR(check_rope_type(j["rope_scaling"], "rope_scaling"));
  }
  if (rope != nullptr) FERRY_RETURN_IF_ERROR(check_rope_type(*rope, "rope_parameters"));
  if (!(c->rope_theta > 0) || !std::isfinite(c->rope_theta)) {
    return invalid_argument(path + ": 'rope_theta' must be positive");
  }
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean()) {
    c->tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
  }
  if (j.value("attention_bias", false) == true) {
    return invalid_argument(path + ": 'attention_bias' true is not supported (Qwen3 has no biases)");
  }
  if (j.contains("hidden_act") && j["hidden_act"] != "silu") {
    return invalid_argument(path + ": 'hidden_act' must be \"silu\"");
  }
  if (j.contains("eos_token_id")) {
    const json& e = j["eos_token_id"];
    if (e.is_number_integer()) {
      c->eos_token_ids.push_back(e.get<int64_t>());
    } else if (e.is_array()) {
      for (const auto& x : e) {
        if (!x.is_number_integer()) return invalid_argument(path + ": 'eos_token_id' must hold integers");
        c->eos_token_ids.push_back(x.get<int64_t>());
      }
    } else if (!e.is_null()) {
      return invalid_argument(path + ": 'eos_token_id' must be an integer or a list");
    }
  }
  return Status();
}

// Layer kinds from `layer_types`: each entry must be one of `allowed`; returns the
// index into `allowed` per layer (empty when the field is absent).
Result<std::vector<size_t>> layer_kinds(const json& j, const std::string& path, const std::vector<std::string>& allowed,
                                        int64_t num_layers) {
  std::vector<size_t> kinds;
  if (!j.contains("layer_types") || j["layer_types"].is_null()) return kinds;
  if (!j["layer_types"].is_array() || static_cast<int64_t>(j["layer_types"].size()) != num_layers) {
    return invalid_argument(path + ": 'layer_types' must be a list of " + std::to_string(num_layers) + " strings");
  }
  for (size_t i = 0; i < j["layer_types"].size(); ++i) {
    const json& t = j["layer_types"][i];
    auto it = t.is_string() ? std::find(allowed.begin(), allowed.end(), t.get<std::string>()) : allowed.end();
    if (it == allowed.end()) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      const std::string found = t.is_string() ? "'" + tokenizer::utf8_shown(t.get<std::string>()) + "'"
                                              : std::string("a value of type ") + t.type_name();
      return invalid_argument(path + ": layer_types[" + std::to_string(i) + "] is " + found + "; only " + names +
                              " layers are supported");
    }
    kinds.push_back(static_cast<size_t>(it - allowed.begin()));
  }
  return kinds;
}

// Qwen3 targets: every layer full attention, no sliding window.
Status check_full_attention_only(const json& j, const std::string& path, int64_t num_layers) {
  if (j.value("use_sliding_window", false) == true) {
    return invalid_argument(path + ": 'use_sliding_window' true is not supported");
  }
  return layer_kinds(j, path, {"full_attention"}, num_layers).status();
}

std::string model_type_of(const json& j) {
  return j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
}

// Wrappers keep tie_word_embeddings / eos at the top level as often as inside.
void inherit_top_level(const json& top, const json& text, Qwen3Config* c) {
  if (!text.contains("tie_word_embeddings") && top.contains("tie_word_embeddings") &&
      top["tie_word_embeddings"].is_boolean()) {
    c->tie_word_embeddings = top["tie_word_embeddings"].get<bool>();
  }
  if (c->eos_token_ids.empty() && top.contains("eos_token_id") && top["eos_token_id"].is_number_integer()) {
    c->eos_token_ids.push_back(top["eos_token_id"].get<int64_t>());
  }
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

std::vector<int64_t> build_target_layer_ids(int64_t num_target_layers, int64_t num_draft_layers) {
  if (num_draft_layers == 1) return {num_target_layers / 2};
  const int64_t start = 1;
  const int64_t end = num_target_layers - 3;
  const int64_t span = end - start;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < num_draft_layers; ++i) {
    // Python's round() rounds halves to even; std::nearbyint does the same.
    double x = static_cast<double>(start) + static_cast<double>(i * span) / static_cast<double>(num_draft_layers - 1);
    ids.push_back(static_cast<int64_t>(std::nearbyint(x)));
  }
  return ids;
}

Result<Qwen3Config> load_qwen3_config(const std::string& folder) {
  const std::string path = folder + "/config.json";
  auto j = read_json(path);
  if (!j.ok()) return j.status();
  Qwen3Config c;
  const json* text = &*j;
  if (j->contains("text_config") && (*j)["text_config"].is_object()) {
    text = &(*j)["text_config"];
    c.vlm_wrapped = true;
  } else if (j->contains("vision_config")) {
    c.vlm_wrapped = true;
  }
  FERRY_RETURN_IF_ERROR(parse_qwen3(*text, path, &c));
  FERRY_RETURN_IF_ERROR(check_full_attention_only(*text, path, c.num_hidden_layers));
  if (c.vocab_size <= 0) return invalid_argument(path + ": missing 'vocab_size'");
  if (c.vlm_wrapped) inherit_top_level(*j, *text, &c);
  return c;
}

Result<std::string> detect_target_architecture(const std::string& folder) {
  const std::string path = folder + "/config.json";
  auto j = read_json(path);
  if (!j.ok()) return j.status();
  std::string type = model_type_of(*j);
  std::string text_type;
  if (j->contains("text_config") && (*j)["text_config"].is_object()) text_type = model_type_of((*j)["text_config"]);
  for (const std::string& t : {type, text_type}) {
    if (t.rfind("qwen3_5_moe", 0) == 0) {
      return invalid_argument(path + ": model_type '" + t +
                              "' (mixture-of-experts) is not supported; qwen3_5 (dense) and qwen3 targets are");
    }
  }
  if (type == "qwen3_5" || type == "qwen3_5_text" || text_type == "qwen3_5_text") return std::string("qwen3_5");
  return std::string("qwen3");
}

Result<Qwen35Config> load_qwen35_config(const std::string& folder) {
  const std::string path = folder + "/config.json";
  auto arch = detect_target_architecture(folder);
  if (!arch.ok()) return arch.status();
  if (*arch != "qwen3_5") return invalid_argument(path + ": model_type is not qwen3_5");
  auto j = read_json(path);
  if (!j.ok()) return j.status();
  Qwen35Config c;
  const json* text = &*j;
  if (j->contains("text_config") && (*j)["text_config"].is_object()) {
    text = &(*j)["text_config"];
    c.text.vlm_wrapped = true;
  }
  FERRY_RETURN_IF_ERROR(parse_qwen3(*text, path, &c.text));
  if (c.text.vocab_size <= 0) return invalid_argument(path + ": missing 'vocab_size'");
  if (c.text.vlm_wrapped) inherit_top_level(*j, *text, &c.text);
  const int64_t layers = c.text.num_hidden_layers;

  auto kinds = layer_kinds(*text, path, {"linear_attention", "full_attention"}, layers);
  if (!kinds.ok()) return kinds.status();
  if (!kinds->empty()) {
    for (size_t k : *kinds) c.linear_layer.push_back(k == 0);
  } else {
    // Hugging Face's rule without layer_types: every interval-th layer is full attention.
    int64_t interval = 4;
    FERRY_RETURN_IF_ERROR(get_int(*text, path, "full_attention_interval", &interval, false));
    if (interval <= 0) return invalid_argument(path + ": 'full_attention_interval' must be positive");
    for (int64_t i = 0; i < layers; ++i) c.linear_layer.push_back((i + 1) % interval != 0);
  }

  const json* rope = text->contains("rope_parameters") && (*text)["rope_parameters"].is_object()
                         ? &(*text)["rope_parameters"]
                         : nullptr;
  const json* factor = nullptr;
  if (rope != nullptr && rope->contains("partial_rotary_factor")) {
    factor = &(*rope)["partial_rotary_factor"];
  } else if (text->contains("partial_rotary_factor")) {
    factor = &(*text)["partial_rotary_factor"];
  }
  if (factor != nullptr) {
    if (!factor->is_number()) return invalid_argument(path + ": 'partial_rotary_factor' must be a number");
    c.partial_rotary_factor = factor->get<double>();
  }
  c.rotary_dim = static_cast<int64_t>(static_cast<double>(c.text.head_dim) * c.partial_rotary_factor);
  if (!(c.partial_rotary_factor > 0) || c.rotary_dim <= 0 || c.rotary_dim > c.text.head_dim || c.rotary_dim % 2 != 0) {
    return invalid_argument(path + ": 'partial_rotary_factor' " + std::to_string(c.partial_rotary_factor) +
                            " gives rotary dim " + std::to_string(c.rotary_dim) + " of head_dim " +
                            std::to_string(c.text.head_dim) + "; it must be even and positive");
  }

  FERRY_RETURN_IF_ERROR(get_positive(*text, path, "linear_num_key_heads", &c.linear_num_key_heads, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_positive(*text, path, "linear_num_value_heads", &c.linear_num_value_heads, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_positive(*text, path, "linear_key_head_dim", &c.linear_key_head_dim, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_positive(*text, path, "linear_value_head_dim", &c.linear_value_head_dim, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_int(*text, path, "linear_conv_kernel_dim", &c.linear_conv_kernel_dim, false));
  if (c.linear_conv_kernel_dim < 1) return invalid_argument(path + ": 'linear_conv_kernel_dim' must be positive");
  FERRY_RETURN_IF_ERROR(check_at_most(path, "linear_conv_kernel_dim", c.linear_conv_kernel_dim, kMaxWidth));
  if (c.linear_num_value_heads % c.linear_num_key_heads != 0) {
    return invalid_argument(path + ": linear_num_value_heads (" + std::to_string(c.linear_num_value_heads) +
                            ") must be a multiple of linear_num_key_heads (" +
                            std::to_string(c.linear_num_key_heads) + ")");
  }
  if (text->contains("num_experts") && (*text)["num_experts"].is_number_integer() &&
      (*text)["num_experts"].get<int64_t>() > 0) {
    return invalid_argument(path + ": 'num_experts' > 0 (mixture-of-experts) is not supported");
  }
  for (const char* key : {"image_token_id", "video_token_id", "vision_start_token_id"}) {
    if (j->contains(key) && (*j)[key].is_number_integer()) c.vision_token_ids.push_back((*j)[key].get<int64_t>());
  }
  return c;
}

Result<DFlashConfig> load_dflash_config(const std::string& folder) {
  const std::string path = folder + "/config.json";
  auto j = read_json(path);
  if (!j.ok()) return j.status();
  DFlashConfig c;
  FERRY_RETURN_IF_ERROR(parse_qwen3(*j, path, &c.model));
  auto kinds = layer_kinds(*j, path, {"full_attention", "sliding_attention"}, c.model.num_hidden_layers);
  if (!kinds.ok()) return kinds.status();
  if (kinds->empty() && j->value("use_sliding_window", false) == true) {
    return invalid_argument(path + ": 'use_sliding_window' true without 'layer_types' is not supported");
  }
  for (size_t k : *kinds) c.sliding_layer.push_back(k == 1);
  if (std::count(c.sliding_layer.begin(), c.sliding_layer.end(), true) > 0) {
    FERRY_RETURN_IF_ERROR(get_positive(*j, path, "sliding_window", &c.sliding_window, INT64_MAX));
  } else {
    c.sliding_layer.assign(static_cast<size_t>(c.model.num_hidden_layers), false);
  }
  FERRY_RETURN_IF_ERROR(get_positive(*j, path, "block_size", &c.block_size, kMaxBlockSize));
  FERRY_RETURN_IF_ERROR(get_int(*j, path, "num_target_layers", &c.num_target_layers, false));
  FERRY_RETURN_IF_ERROR(check_at_most(path, "num_target_layers", c.num_target_layers, kMaxLayers));
  const json empty = json::object();
  const json& dc = j->contains("dflash_config") && (*j)["dflash_config"].is_object() ? (*j)["dflash_config"] : empty;
  if (dc.contains("mask_token_id")) {
    FERRY_RETURN_IF_ERROR(get_int(dc, path, "mask_token_id", &c.mask_token_id, true));
  } else {
    FERRY_RETURN_IF_ERROR(get_int(*j, path, "mask_token_id", &c.mask_token_id, false));
  }
  if (c.mask_token_id < 0) return invalid_argument(path + ": missing 'dflash_config.mask_token_id'");
  if (dc.contains("target_layer_ids") && !dc["target_layer_ids"].is_null()) {
    if (!dc["target_layer_ids"].is_array() || dc["target_layer_ids"].empty()) {
      return invalid_argument(path + ": 'dflash_config.target_layer_ids' must be a non-empty list");
    }
    for (const auto& x : dc["target_layer_ids"]) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0) {
        return invalid_argument(path + ": 'dflash_config.target_layer_ids' must hold non-negative integers");
      }
      c.target_layer_ids.push_back(x.get<int64_t>());
    }
  } else {
    if (c.num_target_layers <= 0) {
      return invalid_argument(path + ": neither 'dflash_config.target_layer_ids' nor 'num_target_layers' is set");
    }
    c.target_layer_ids = build_target_layer_ids(c.num_target_layers, c.model.num_hidden_layers);
    c.target_layer_ids_derived = true;
  }
  return c;
}

}  // namespace ferry::eval
