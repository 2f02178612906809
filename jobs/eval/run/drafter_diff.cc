#include "jobs/eval/run/drafter_diff.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "jobs/eval/io/dflash_config.h"
#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/run/report_fields.h"

namespace ferry::eval {
namespace {

std::string num(double x) {
  std::ostringstream out;
  out << std::setprecision(6) << x;
  return out.str();
}

bool float_dtype(StDtype d) {
  return d == StDtype::kF32 || d == StDtype::kF16 || d == StDtype::kBF16 || d == StDtype::kF64;
}

double value_at(const TensorRecord& r, int64_t i) {
  const uint8_t* p = r.data + i * static_cast<int64_t>(st_dtype_size(r.info.dtype));
  switch (r.info.dtype) {
    case StDtype::kF32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case StDtype::kF64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case StDtype::kBF16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return bf16_to_float(b);
    }
    case StDtype::kF16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return f16_to_float(b);
    }
    default: return 0;
  }
}

double l2(const TensorRecord& r) {
  double s = 0;
  const int64_t n = r.info.numel();
  for (int64_t i = 0; i < n; ++i) {
    double x = value_at(r, i);
    s += x * x;
  }
  return std::sqrt(s);
}

}  // namespace

bool DrafterDiff::any_difference() const {
  for (const Field& f : fields) {
    if (f.differs) return true;
  }
  return !tensors.empty();
}

namespace {

// The config fields of the two drafters side by side, each marked when it differs.
void diff_config(const DFlashConfig& cc, const DFlashConfig& rc, DrafterDiff* diff) {
  auto field = [&](const std::string& name, const std::string& a, const std::string& b) {
    diff->fields.push_back({name, a, b, a != b});
  };
  auto int_field = [&](const std::string& name, int64_t a, int64_t b) {
    field(name, std::to_string(a), std::to_string(b));
  };
  field("target_layer_ids", shape_string(cc.target_layer_ids) + (cc.target_layer_ids_derived ? " (derived)" : ""),
        shape_string(rc.target_layer_ids) + (rc.target_layer_ids_derived ? " (derived)" : ""));
  int_field("block_size", cc.block_size, rc.block_size);
  int_field("mask_token_id", cc.mask_token_id, rc.mask_token_id);
  int_field("num_hidden_layers", cc.model.num_hidden_layers, rc.model.num_hidden_layers);
  int_field("hidden_size", cc.model.hidden_size, rc.model.hidden_size);
  int_field("intermediate_size", cc.model.intermediate_size, rc.model.intermediate_size);
  int_field("num_attention_heads", cc.model.num_attention_heads, rc.model.num_attention_heads);
  int_field("num_key_value_heads", cc.model.num_key_value_heads, rc.model.num_key_value_heads);
  int_field("head_dim", cc.model.head_dim, rc.model.head_dim);
  field("rope_theta", num(cc.model.rope_theta), num(rc.model.rope_theta));
  field("rms_norm_eps", num(cc.model.rms_norm_eps), num(rc.model.rms_norm_eps));
  // Qwen3.6-style drafters: which layers slide, and the window ("full" when none do).
  auto layer_mix = [](const DFlashConfig& c) {
    std::string out;
    for (bool sliding : c.sliding_layer) out += (out.empty() ? "" : ",") + std::string(sliding ? "sliding" : "full");
    return out;
  };
  field("layer_types", layer_mix(cc), layer_mix(rc));
  int_field("sliding_window", cc.sliding_window, rc.sliding_window);
}

// One tensor both drafters hold, compared by shape, dtype and values: added to the
// diff when it differs, counted as compared (and identical) when it is a float pair.
void diff_tensor_values(const TensorRecord& c, const TensorRecord& r, DrafterDiff::Tensor t, DrafterDiff* diff) {
  t.candidate = c.info.dtype_name + " " + shape_string(c.info.shape);
  t.reference = r.info.dtype_name + " " + shape_string(r.info.shape);
  if (c.info.shape != r.info.shape) {
    t.issue = "shape";
    diff->tensors.push_back(t);
    return;
  }
  if (!float_dtype(c.info.dtype) || !float_dtype(r.info.dtype)) {
    if (c.info.dtype_name != r.info.dtype_name) {
      t.issue = "dtype";
      diff->tensors.push_back(t);
    }
    return;
  }
  ++diff->tensors_compared;
  t.candidate_norm = l2(c);
  t.reference_norm = l2(r);
  double d2 = 0;
  for (int64_t i = 0; i < c.info.numel(); ++i) {
    double d = value_at(c, i) - value_at(r, i);
    d2 += d * d;
  }
  t.relative_distance = std::sqrt(d2) / std::max(t.reference_norm, 1e-30);
  t.candidate += " norm " + num(t.candidate_norm);
  t.reference += " norm " + num(t.reference_norm);
  if (c.info.dtype_name != r.info.dtype_name) {
    t.issue = "dtype";
    diff->tensors.push_back(t);
  } else if (t.relative_distance > kIdenticalRelativeDistance) {
    t.issue = "values";
    diff->tensors.push_back(t);
  } else {
    ++diff->tensors_identical;
  }
}

// Every tensor name of either checkpoint: one held by one side only is listed as
// such, the others compared (diff_tensor_values).
Status diff_tensors(SafetensorsCheckpoint& ca, SafetensorsCheckpoint& ra, DrafterDiff* diff) {
  std::set<std::string> names(ca.names().begin(), ca.names().end());
  names.insert(ra.names().begin(), ra.names().end());
  for (const std::string& name : names) {
    DrafterDiff::Tensor t;
    t.name = name;
    const bool in_c = ca.contains(name), in_r = ra.contains(name);
    if (!in_r || !in_c) {
      auto info = (in_c ? ca : ra).info(name);
      if (!info.ok()) return info.status();
      t.issue = in_c ? "only in candidate" : "only in reference";
      (in_c ? t.candidate : t.reference) = info->dtype_name + " " + shape_string(info->shape);
      diff->tensors.push_back(t);
      continue;
    }
    auto c = ca.read(name);
    if (!c.ok()) return c.status();
    auto r = ra.read(name);
    if (!r.ok()) return r.status();
    diff_tensor_values(*c, *r, std::move(t), diff);
  }
  return Status();
}

}  // namespace

Result<DrafterDiff> diff_drafters(const std::string& candidate_folder, const std::string& reference_folder) {
  auto cc = load_dflash_config(candidate_folder);
  if (!cc.ok()) return cc.status();
  auto rc = load_dflash_config(reference_folder);
  if (!rc.ok()) return rc.status();
  DrafterDiff diff;
  diff_config(*cc, *rc, &diff);
  auto ca = SafetensorsCheckpoint::open(candidate_folder);
  if (!ca.ok()) return ca.status();
  auto ra = SafetensorsCheckpoint::open(reference_folder);
  if (!ra.ok()) return ra.status();
  FERRY_RETURN_IF_ERROR(diff_tensors(*ca.value(), *ra.value(), &diff));
  return diff;
}

nlohmann::json DrafterDiff::to_json() const { return fields_json(*this, drafter_diff_fields); }

std::string DrafterDiff::to_text() const {
  std::ostringstream out;
  out << "Drafter vs reference:\n";
  for (const Field& f : fields) {
    out << "  " << (f.differs ? "DIFF " : "same ") << std::left << std::setw(22) << f.name << f.candidate;
    if (f.differs) out << "  (reference " << f.reference << ")";
    out << "\n";
  }
  out << "  tensors: " << tensors_compared << " compared, " << tensors_identical << " identical, " << tensors.size()
      << " differ\n";
  for (const Tensor& t : tensors) {
    out << "    " << t.name << ": " << t.issue;
    if (!t.candidate.empty()) out << "; candidate " << t.candidate;
    if (!t.reference.empty()) out << "; reference " << t.reference;
    if (t.relative_distance >= 0) out << "; relative distance " << num(t.relative_distance);
    out << "\n";
  }
  return out.str();
}

}  // namespace ferry::eval
