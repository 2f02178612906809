#include "jobs/eval/model_config.h"

#include <cerrno>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace ferry::eval {
namespace {

using nlohmann::json;

Result<json> read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return errno_status(path + ": cannot open", errno);
  std::stringstream buf;
  buf << in.rdbuf();
  json j = json::parse(buf.str(), nullptr, /*allow_exceptions=*/false);
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

Status get_positive(const json& j, const std::string& path, const char* key, int64_t* out) {
  FERRY_RETURN_IF_ERROR(get_int(j, path, key, out, true));
  if (*out <= 0) return invalid_argument(path + ": '" + key + "' must be positive");
  return Status();
}

Status parse_qwen3(const json& j, const std::string& path, Qwen3Config* c) {
  c->path = path;
  if (j.contains("model_type") && j["model_type"].is_string()) c->model_type = j["model_type"].get<std::string>();
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "hidden_size", &c->hidden_size));
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "intermediate_size", &c->intermediate_size));
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "num_hidden_layers", &c->num_hidden_layers));
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "num_attention_heads", &c->num_attention_heads));
  c->num_key_value_heads = c->num_attention_heads;
  FERRY_RETURN_IF_ERROR(get_int(j, path, "num_key_value_heads", &c->num_key_value_heads, false));
  FERRY_RETURN_IF_ERROR(get_int(j, path, "vocab_size", &c->vocab_size, false));
  c->head_dim = c->hidden_size / c->num_attention_heads;
  FERRY_RETURN_IF_ERROR(get_int(j, path, "head_dim", &c->head_dim, false));
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
  if (j.value("use_sliding_window", false) == true) {
    return invalid_argument(path + ": 'use_sliding_window' true is not supported");
  }
  if (j.contains("layer_types") && j["layer_types"].is_array()) {
    for (size_t i = 0; i < j["layer_types"].size(); ++i) {
      const json& t = j["layer_types"][i];
      if (t != "full_attention") {
        return invalid_argument(path + ": layer_types[" + std::to_string(i) + "] is " + t.dump() +
                                "; only full_attention layers are supported");
      }
    }
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

}  // namespace

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
  if (c.vocab_size <= 0) return invalid_argument(path + ": missing 'vocab_size'");
  if (c.vlm_wrapped) {
    // Wrappers keep tie_word_embeddings / eos at the top level as often as inside.
    if (!text->contains("tie_word_embeddings") && j->contains("tie_word_embeddings") &&
        (*j)["tie_word_embeddings"].is_boolean()) {
      c.tie_word_embeddings = (*j)["tie_word_embeddings"].get<bool>();
    }
    if (c.eos_token_ids.empty() && j->contains("eos_token_id") && (*j)["eos_token_id"].is_number_integer()) {
      c.eos_token_ids.push_back((*j)["eos_token_id"].get<int64_t>());
    }
  }
  return c;
}

Result<DFlashConfig> load_dflash_config(const std::string& folder) {
  const std::string path = folder + "/config.json";
  auto j = read_json(path);
  if (!j.ok()) return j.status();
  DFlashConfig c;
  FERRY_RETURN_IF_ERROR(parse_qwen3(*j, path, &c.model));
  FERRY_RETURN_IF_ERROR(get_positive(*j, path, "block_size", &c.block_size));
  FERRY_RETURN_IF_ERROR(get_int(*j, path, "num_target_layers", &c.num_target_layers, false));
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
