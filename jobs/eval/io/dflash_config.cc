#include "jobs/eval/io/dflash_config.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "jobs/eval/io/config_json.h"

namespace ferry::eval {
namespace {

using nlohmann::json;

// Per layer full or sliding (Qwen3.6's drafter), and the window when any slides.
Status read_sliding_layers(const json& j, const std::string& path, DFlashConfig* c) {
  auto kinds = layer_kinds(j, path, {"full_attention", "sliding_attention"}, c->model.num_hidden_layers);
  if (!kinds.ok()) return kinds.status();
  if (kinds->empty() && j.contains("use_sliding_window") && j["use_sliding_window"] == true) {
    return invalid_argument(path + ": 'use_sliding_window' true without 'layer_types' is not supported");
  }
  for (size_t k : *kinds) c->sliding_layer.push_back(k == 1);
  if (std::count(c->sliding_layer.begin(), c->sliding_layer.end(), true) > 0) {
    return get_positive(j, path, "sliding_window", &c->sliding_window, INT64_MAX);
  }
  c->sliding_layer.assign(static_cast<size_t>(c->model.num_hidden_layers), false);
  return Status();
}

// target_layer_ids from dflash_config, or derived from num_target_layers as the DFlash
// code derives them.
Status read_target_layer_ids(const json& dc, const std::string& path, DFlashConfig* c) {
  if (dc.contains("target_layer_ids") && !dc["target_layer_ids"].is_null()) {
    if (!dc["target_layer_ids"].is_array() || dc["target_layer_ids"].empty()) {
      return invalid_argument(path + ": 'dflash_config.target_layer_ids' must be a non-empty list");
    }
    for (const auto& x : dc["target_layer_ids"]) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0) {
        return invalid_argument(path + ": 'dflash_config.target_layer_ids' must hold non-negative integers");
      }
      c->target_layer_ids.push_back(x.get<int64_t>());
    }
    return Status();
  }
  if (c->num_target_layers <= 0) {
    return invalid_argument(path + ": neither 'dflash_config.target_layer_ids' nor 'num_target_layers' is set");
  }
  c->target_layer_ids = build_target_layer_ids(c->num_target_layers, c->model.num_hidden_layers);
  c->target_layer_ids_derived = true;
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

Result<DFlashConfig> load_dflash_config(const std::string& folder) {
  const std::string path = folder + "/config.json";
  auto j = read_json(path);
  if (!j.ok()) return j.status();
  DFlashConfig c;
  FERRY_RETURN_IF_ERROR(read_decoder_config(*j, path, &c.model));
  FERRY_RETURN_IF_ERROR(read_sliding_layers(*j, path, &c));
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
  FERRY_RETURN_IF_ERROR(read_target_layer_ids(dc, path, &c));
  return c;
}

}  // namespace ferry::eval
