#include "jobs/eval/stage/eval_progress_reader.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "base/json_depth.h"
#include "jobs/eval/run/eval_progress.h"

namespace ferry {
namespace {

constexpr size_t kMaxLine = 4096;   // the engine's lines are ~200 bytes
constexpr double kMaxCount = 1e12;  // prompts, tokens, seconds: past any real eval

bool count(const nlohmann::json& in, const char* key, nlohmann::json* out, bool required) {
  auto it = in.find(key);
  if (it == in.end()) return !required;
  if (!it->is_number_integer() && !it->is_number_unsigned()) return false;
  const auto v = it->get<int64_t>();
  if (v < 0 || static_cast<double>(v) > kMaxCount) return false;
  (*out)[key] = v;
  return true;
}

bool real(const nlohmann::json& in, const char* key, nlohmann::json* out, bool required) {
  auto it = in.find(key);
  if (it == in.end()) return !required;
  if (!it->is_number()) return false;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0 || v > kMaxCount) return false;
  (*out)[key] = v;
  return true;
}

}  // namespace

std::optional<nlohmann::json> read_eval_progress(const std::string& text) {
  const std::string marker = kEvalProgressJson;
  if (text.size() > kMaxLine || text.compare(0, marker.size(), marker) != 0) return std::nullopt;
  // Flat by construction: a nested line is not ours.
  const std::string body = text.substr(marker.size());
  if (!check_json_depth(body, "progress", 1).ok()) return std::nullopt;
  auto in = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (in.is_discarded() || !in.is_object()) return std::nullopt;
  nlohmann::json out = {{"kind", "eval"}};
  auto phase = in.find("phase");
  if (phase == in.end() || !phase->is_string()) return std::nullopt;
  const auto p = phase->get<std::string>();
  if (p != "candidate" && p != "reference" && p != "baseline") return std::nullopt;
  out["phase"] = p;
  const bool ok = count(in, "run", &out, true) && count(in, "runs", &out, true) &&
                  count(in, "prompts_done", &out, true) && count(in, "prompts_total", &out, true) &&
                  count(in, "tokens", &out, true) && real(in, "tokens_per_s", &out, true) &&
                  real(in, "eta_s", &out, false) && real(in, "tau", &out, false);
  if (!ok || out["prompts_done"].get<int64_t>() > out["prompts_total"].get<int64_t>() ||
      out["run"].get<int64_t>() > out["runs"].get<int64_t>()) {
    return std::nullopt;
  }
  return out;
}

void pass_on_eval_progress(const std::string& line, StageEnv& env) {
  const std::string prefix = kEvalProgressPrefix;
  if (line.compare(0, prefix.size(), prefix) != 0) return;
  const std::string text = line.substr(prefix.size());
  auto progress = read_eval_progress(text);
  if (progress) {
    env.set_progress(std::move(*progress));
  } else {
    env.note(text);
  }
}

}  // namespace ferry
