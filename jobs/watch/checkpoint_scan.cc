#include "jobs/watch/checkpoint_scan.h"

#include <fnmatch.h>

#include <algorithm>

#include "base/peer_json.h"

namespace ferry {

std::optional<int64_t> step_of(const std::string& name) {
  size_t end = name.size(), begin = end;
  while (begin > 0 && name[begin - 1] >= '0' && name[begin - 1] <= '9') --begin;
  if (begin == end || end - begin > 15) return std::nullopt;
  return std::stoll(name.substr(begin));
}

std::vector<CheckpointFolder> checkpoint_folders(const nlohmann::json& files, const std::string& pattern,
                                                 const std::string& marker) {
  std::map<std::string, CheckpointFolder> by_name;
  std::map<std::string, bool> has_config, has_safetensors;
  if (!files.is_array()) return {};
  for (const auto& f : files) {
    const std::string path = str_field(f, "path");  // the host's word: any shape reads as nothing
    const size_t slash = path.find('/');
    if (slash == std::string::npos || slash == 0) continue;  // a file beside the checkpoints
    const std::string name = path.substr(0, slash), rest = path.substr(slash + 1);
    if (::fnmatch(pattern.c_str(), name.c_str(), FNM_PERIOD) != 0) continue;
    CheckpointFolder& c = by_name[name];
    c.name = name;
    c.signature += rest + ":" + std::to_string(int_field(f, "size")) + ";";
    if (rest == "config.json") has_config[name] = true;
    const bool top = rest.find('/') == std::string::npos;
    const auto ends_with = [&](const char* tail) {
      std::string t = tail;
      return rest.size() >= t.size() && rest.compare(rest.size() - t.size(), t.size(), t) == 0;
    };
    if (top && (rest == "model.safetensors.index.json" || ends_with(".safetensors"))) has_safetensors[name] = true;
    if (!marker.empty() && rest == marker) c.has_marker = true;
  }
  std::vector<CheckpointFolder> out;
  for (auto& [name, c] : by_name) {
    c.step = step_of(name);
    c.has_weights = has_config[name] && has_safetensors[name];
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const CheckpointFolder& a, const CheckpointFolder& b) {
    if (a.step.has_value() != b.step.has_value()) return a.step.has_value();
    if (a.step && *a.step != *b.step) return *a.step < *b.step;
    return a.name < b.name;
  });
  return out;
}

std::vector<CheckpointFolder> CheckpointScan::update(const std::vector<CheckpointFolder>& listing) {
  std::vector<CheckpointFolder> complete;
  std::map<std::string, std::string> seen;
  incomplete_.clear();
  for (const auto& c : listing) {
    seen[c.name] = c.signature;
    bool done = false;
    if (!marker_.empty()) {
      done = c.has_marker;
    } else {
      auto last = last_signature_.find(c.name);
      done = c.has_weights && last != last_signature_.end() && last->second == c.signature;
    }
    if (done) complete.push_back(c);
    else incomplete_.push_back(c.name);
  }
  last_signature_ = std::move(seen);
  return complete;
}

}  // namespace ferry
