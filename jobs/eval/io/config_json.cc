#include "jobs/eval/io/config_json.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/json_depth.h"
#include "jobs/tokenizer/utf8.h"

namespace ferry::eval {
namespace {

using nlohmann::json;

constexpr size_t kMaxConfigBytes = 16 << 20;  // real ones are a few KiB

std::string model_type_of(const json& j) {
  return j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
}

}  // namespace

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

const json* text_config_of(const json& j) {
  return j.contains("text_config") && j["text_config"].is_object() ? &j["text_config"] : nullptr;
}

void inherit_top_level(const json& top, const json& text, DecoderConfig* c) {
  if (!text.contains("tie_word_embeddings") && top.contains("tie_word_embeddings") &&
      top["tie_word_embeddings"].is_boolean()) {
    c->tie_word_embeddings = top["tie_word_embeddings"].get<bool>();
  }
  if (c->eos_token_ids.empty() && top.contains("eos_token_id") && top["eos_token_id"].is_number_integer()) {
    c->eos_token_ids.push_back(top["eos_token_id"].get<int64_t>());
  }
}

Result<ConfigNames> read_config_names(const std::string& folder) {
  ConfigNames names;
  names.path = folder + "/config.json";
  auto j = read_json(names.path);
  if (!j.ok()) return j.status();
  names.model_type = model_type_of(*j);
  if (const json* text = text_config_of(*j)) names.text_model_type = model_type_of(*text);
  if (j->contains("architectures") && (*j)["architectures"].is_array()) {
    for (const json& a : (*j)["architectures"]) {
      if (a.is_string()) names.architectures.push_back(a.get<std::string>());
    }
  }
  return names;
}

}  // namespace ferry::eval
