#include "jobs/eval/stage/watch/checkpoint_scan.h"

#include <fnmatch.h>

#include <algorithm>

namespace ferry {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A name the watch may append to its folder: one component, never "." or "..".
bool plain_name(const std::string& name, const std::string& pattern) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos && ::fnmatch(pattern.c_str(), name.c_str(), FNM_PERIOD) == 0;
}

}  // namespace

std::optional<int64_t> step_of(const std::string& name) {
  size_t end = name.size(), begin = end;
  while (begin > 0 && name[begin - 1] >= '0' && name[begin - 1] <= '9') --begin;
  if (begin == end || end - begin > 15) return std::nullopt;
  return std::stoll(name.substr(begin));
}

std::vector<CheckpointFolder> checkpoint_folders(const std::vector<protocol::ScannedFolder>& folders,
                                                 const std::string& pattern, const std::string& marker) {
  std::vector<CheckpointFolder> out;
  for (const auto& f : folders) {
    CheckpointFolder c;
    c.name = f.name;
    if (!plain_name(c.name, pattern)) continue;
    c.newest_mtime_ns = f.mtime_ns;
    c.listed_whole = !f.truncated;
    bool has_config = false, has_safetensors = false;
    for (const auto& e : f.files) {
      const std::string& rest = e.path;
      const int64_t size = e.size;
      const int64_t mtime = e.mtime_ns;
      c.signature += rest + ":" + std::to_string(size) + ":" + std::to_string(mtime) + ";";
      c.newest_mtime_ns = std::max(c.newest_mtime_ns, mtime);
      const bool top = rest.find('/') == std::string::npos;
      if (rest == "config.json") has_config = true;
      if (top && (rest == "model.safetensors.index.json" || ends_with(rest, ".safetensors"))) has_safetensors = true;
      if (!marker.empty() && rest == marker) c.has_marker = true;
    }
    c.step = step_of(c.name);
    c.has_weights = has_config && has_safetensors;
    out.push_back(std::move(c));
  }
  std::stable_sort(out.begin(), out.end(), [](const CheckpointFolder& a, const CheckpointFolder& b) {
    if (a.step.has_value() != b.step.has_value()) return a.step.has_value();
    if (a.step && *a.step != *b.step) return *a.step < *b.step;
    return a.name < b.name;
  });
  return out;
}

std::vector<CheckpointFolder> CheckpointScan::update(const std::vector<CheckpointFolder>& listing, int64_t now_ms) {
  std::vector<CheckpointFolder> complete;
  std::map<std::string, Seen> seen;
  incomplete_.clear();
  for (const auto& c : listing) {
    Seen s{c.signature, now_ms, 1};
    auto last = seen_.find(c.name);
    if (last != seen_.end() && last->second.signature == c.signature) {
      s = last->second;
      ++s.polls;
    }
    bool done = false;
    if (!marker_.empty()) {
      done = c.has_marker;
    } else {
      done = c.has_weights && s.polls >= kStablePolls && now_ms - s.since_ms >= kStableMs;
    }
    if (done && c.listed_whole) complete.push_back(c);
    else incomplete_.push_back(c.name);
    seen[c.name] = std::move(s);
  }
  seen_ = std::move(seen);
  return complete;
}

}  // namespace ferry
