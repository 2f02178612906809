// The readers every family's config.json reader shares: the file read as one JSON
// object (size- and depth-bounded), integers with their limits, layer kinds, the
// fields a VLM wrapper keeps at its top level, and the names a config gives its family
// (model_type, architectures) for models/families to match. Errors name the file and
// the field. No libtorch; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "jobs/eval/io/decoder_config.h"

namespace ferry::eval {

// Bounds on what a config.json may ask for: far past every real model (Qwen3.5-397B has
// 60 layers, hidden 4096; vocabularies reach 262k), and short of the sizes whose tables
// alone would fill memory or whose loops would run for hours before a weight is read.
constexpr int64_t kMaxLayers = 1024;     // num_hidden_layers, num_target_layers
constexpr int64_t kMaxBlockSize = 1024;  // a DFlash block (real: 16)
constexpr int64_t kMaxVocab = 1 << 24;   // the tokenizer's id bound too
constexpr int64_t kMaxWidth = 1 << 20;   // hidden and intermediate sizes, heads, head dims

/// `path` read as one JSON object.
Result<nlohmann::json> read_json(const std::string& path);

/// `j[key]` into `*out` when present; an error when it is not an integer, or when it is
/// absent and `required`.
Status get_int(const nlohmann::json& j, const std::string& path, const char* key, int64_t* out, bool required);
Status check_at_most(const std::string& path, const char* key, int64_t value, int64_t max);
/// A required integer in [1, max].
Status get_positive(const nlohmann::json& j, const std::string& path, const char* key, int64_t* out, int64_t max);

/// Layer kinds from `layer_types`: each entry must be one of `allowed`; returns the
/// index into `allowed` per layer (empty when the field is absent).
Result<std::vector<size_t>> layer_kinds(const nlohmann::json& j, const std::string& path,
                                        const std::vector<std::string>& allowed, int64_t num_layers);

/// The object a VLM wrapper keeps its text backbone's config in, or null.
const nlohmann::json* text_config_of(const nlohmann::json& j);
/// Wrappers keep tie_word_embeddings / eos at the top level as often as inside.
void inherit_top_level(const nlohmann::json& top, const nlohmann::json& text, DecoderConfig* c);

/// What a config.json calls its model: empty strings and lists where absent.
struct ConfigNames {
  std::string path;
  std::string model_type;       // top level
  std::string text_model_type;  // text_config's (a VLM wrapper's backbone)
  std::vector<std::string> architectures;
};
Result<ConfigNames> read_config_names(const std::string& folder);

}  // namespace ferry::eval
