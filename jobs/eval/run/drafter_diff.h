// DrafterDiff: what differs between a candidate drafter and a reference drafter —
// the config fields that decide how it is run (target_layer_ids, block_size, mask id,
// layer count, dimensions) and, tensor by tensor, names, shapes, dtypes, L2 norms and
// the relative distance between values. These are the first things to look at when a
// drafter trails its reference. Reads headers and tensor bytes through the mapped
// checkpoint; no libtorch. Plain function; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ferry::eval {

struct DrafterDiff {
  struct Field {
    std::string name;
    std::string candidate;
    std::string reference;
    bool differs = false;
  };
  struct Tensor {
    std::string name;
    std::string issue;  // "only in candidate", "only in reference", "shape", "dtype", "values"
    std::string candidate;  // shape/dtype/norm as text
    std::string reference;
    double candidate_norm = 0;
    double reference_norm = 0;
    double relative_distance = -1;  // ||c - r|| / ||r||; -1 when not comparable
  };
  std::vector<Field> fields;    // every compared field, differing or not
  std::vector<Tensor> tensors;  // only tensors with an issue
  int64_t tensors_compared = 0;  // present in both with equal shape
  int64_t tensors_identical = 0;

  bool any_difference() const;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

/// Relative distances at or below this count as identical values.
constexpr double kIdenticalRelativeDistance = 1e-6;

Result<DrafterDiff> diff_drafters(const std::string& candidate_folder, const std::string& reference_folder);

}  // namespace ferry::eval
