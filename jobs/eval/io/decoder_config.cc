#include "jobs/eval/io/decoder_config.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "jobs/eval/io/config_json.h"
#include "jobs/tokenizer/utf8.h"

namespace ferry::eval {
namespace {

using nlohmann::json;

Status read_head_counts(const json& j, const std::string& path, DecoderConfig* c) {
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
                            ") must be a multiple of num_key_value_heads (" + std::to_string(c->num_key_value_heads) +
                            ")");
  }
  if (c->head_dim <= 0 || c->head_dim % 2 != 0) {
    return invalid_argument(path + ": 'head_dim' must be positive and even");
  }
  return Status();
}

// rope_type (or the older "type") of a RoPE object; absent or null is plain RoPE.
Result<std::string> rope_type_of(const json& r, const std::string& path, const char* key) {
  for (const char* name : {"rope_type", "type"}) {
    if (!r.contains(name) || r[name].is_null()) continue;
    if (!r[name].is_string()) return invalid_argument(path + ": '" + key + "." + name + "' must be a string");
    return r[name].get<std::string>();
  }
  return std::string("default");
}

// θ from rope_theta, or from rope_parameters (Qwen3.5's layout); plain RoPE only.
Status read_rope(const json& j, const std::string& path, DecoderConfig* c) {
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
    auto type = rope_type_of(r, path, key);
    if (!type.ok()) return type.status();
    if (*type != "default") {
      return invalid_argument(path + ": '" + key + "' of type '" + tokenizer::utf8_shown(*type) +
                              "' is not supported (default RoPE only)");
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
  return Status();
}

Status read_eos_ids(const json& j, const std::string& path, DecoderConfig* c) {
  if (!j.contains("eos_token_id")) return Status();
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
  return Status();
}

}  // namespace

Status read_decoder_config(const json& j, const std::string& path, DecoderConfig* c) {
  c->path = path;
  if (j.contains("model_type") && j["model_type"].is_string()) c->model_type = j["model_type"].get<std::string>();
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "hidden_size", &c->hidden_size, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "intermediate_size", &c->intermediate_size, kMaxWidth));
  FERRY_RETURN_IF_ERROR(get_positive(j, path, "num_hidden_layers", &c->num_hidden_layers, kMaxLayers));
  FERRY_RETURN_IF_ERROR(read_head_counts(j, path, c));
  if (j.contains("rms_norm_eps")) {
    if (!j["rms_norm_eps"].is_number()) return invalid_argument(path + ": 'rms_norm_eps' must be a number");
    c->rms_norm_eps = j["rms_norm_eps"].get<double>();
  }
  FERRY_RETURN_IF_ERROR(read_rope(j, path, c));
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean()) {
    c->tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
  }
  if (j.contains("attention_bias") && j["attention_bias"] == true) {
    return invalid_argument(path + ": 'attention_bias' true is not supported (Qwen3 has no biases)");
  }
  if (j.contains("hidden_act") && j["hidden_act"] != "silu") {
    return invalid_argument(path + ": 'hidden_act' must be \"silu\"");
  }
  return read_eos_ids(j, path, c);
}

Result<const json*> read_backbone_config(const json& top, const std::string& path, DecoderConfig* c) {
  const json* text = text_config_of(top);
  c->vlm_wrapped = text != nullptr;
  if (text == nullptr) text = &top;
  FERRY_RETURN_IF_ERROR(read_decoder_config(*text, path, c));
  if (c->vocab_size <= 0) return invalid_argument(path + ": missing 'vocab_size'");
  if (c->vlm_wrapped) inherit_top_level(top, *text, c);
  return text;
}

}  // namespace ferry::eval
