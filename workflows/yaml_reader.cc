#include "workflows/yaml_reader.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "workflows/byte_size.h"
#include "workflows/duration.h"
#include "workflows/shell_choice.h"
#include "workflows/slurm_options.h"

namespace ferry::workflow {
namespace {

const std::vector<std::string> kSlurmKeys = {"partition", "time", "cpus", "mem", "gres", "account", "qos", "options"};

Location mark_of(const YAML::Node& n) {
  YAML::Mark m = n.Mark();
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 100) return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

const char* type_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "an undefined value";
  }
}

Location YamlReader::loc(const YAML::Node& n) const {
  if (n.IsNull()) {
    for (const auto& [node, at] : empty_values_) {
      if (node.is(n)) return at;
    }
  }
  return mark_of(n);
}

bool YamlReader::check_name(const std::string& kind, const std::string& name, Location at) {
  if (valid_name(name)) return true;
  d_.error(at, kind + " name '" + name + "' may use only letters, digits, '_' and '-'");
  return false;
}

YamlReader::Entries YamlReader::entries_of(const YAML::Node& map, const std::vector<std::string>& allowed,
                                           const std::string& what, std::set<std::string>* hinted) {
  Entries out;
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: `it->first` lives in a temporary proxy that dies with the statement.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      d_.error(loc(key), "keys of " + what + " must be plain names");
      continue;
    }
    std::string k = key.Scalar();
    if (value.IsNull()) empty_values_.push_back({value, loc(key)});
    if (!seen.insert(k).second) {
      d_.error(loc(key), "duplicate key '" + k + "' in " + what);
      continue;
    }
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string hint = did_you_mean(k, allowed);
      if (hinted && !hint.empty()) hinted->insert(hint);
      d_.error(loc(key),
               "unknown key '" + k + "' in " + what + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
      continue;
    }
    out.push_back({k, loc(key), value});
  }
  return out;
}

Location YamlReader::key_at(const Entries& e, const std::string& key) {
  for (const auto& entry : e) {
    if (entry.key == key) return entry.at;
  }
  return {};
}

const YAML::Node* YamlReader::find(const Entries& e, const std::string& key) {
  for (const auto& entry : e) {
    if (entry.key == key) return &entry.node;
  }
  return nullptr;
}

std::optional<std::string> YamlReader::scalar(const YAML::Node& n, const std::string& what) {
  if (!n.IsScalar()) {
    d_.error(loc(n), "'" + what + "' must be a scalar, not " + type_name(n));
    return std::nullopt;
  }
  return n.Scalar();
}

std::optional<Text> YamlReader::text(const YAML::Node& n, const std::string& what) {
  auto s = scalar(n, what);
  if (!s) return std::nullopt;
  return Text{*s, loc(n)};
}

std::optional<long long> YamlReader::integer(const YAML::Node& n, const std::string& what, long long min,
                                             long long max) {
  auto s = scalar(n, what);
  if (!s) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s->c_str(), &end, 10);
  if (s->empty() || *end != '\0' || errno == ERANGE) {
    d_.error(loc(n), "'" + what + "' must be an integer, got '" + *s + "'");
    return std::nullopt;
  }
  if (v < min || v > max) {
    d_.error(loc(n),
             "'" + what + "' must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + *s);
    return std::nullopt;
  }
  return v;
}

std::optional<double> YamlReader::number(const YAML::Node& n, const std::string& what) {
  auto s = scalar(n, what);
  if (!s) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s->c_str(), &end);
  if (s->empty() || *end != '\0') {
    d_.error(loc(n), "'" + what + "' must be a number, got '" + *s + "'");
    return std::nullopt;
  }
  return v;
}

std::optional<double> YamlReader::duration(const YAML::Node& n, const std::string& what) {
  auto s = scalar(n, what);
  if (!s) return std::nullopt;
  auto v = parse_duration(*s);
  if (!v) d_.error(loc(n), "'" + what + "' must be a duration like 30s, 5m, 1h or 500ms, got '" + *s + "'");
  return v;
}

std::optional<int64_t> YamlReader::byte_size(const YAML::Node& n, const std::string& what, int64_t min) {
  auto s = scalar(n, what);
  if (!s) return std::nullopt;
  auto v = parse_byte_size(*s);
  if (!v) {
    d_.error(loc(n), "'" + what + "' must be a size like 100M, 2G or 1048576 (bytes), got '" + *s + "'");
  } else if (*v < min) {
    d_.error(loc(n), "'" + what + "' must be at least " + std::to_string(min >> 20) + "M, got '" + *s + "'");
    return std::nullopt;
  }
  return v;
}

std::optional<std::string> YamlReader::one_of(const YAML::Node& n, const std::string& what,
                                              const std::vector<std::string>& choices) {
  auto s = scalar(n, what);
  if (!s) return std::nullopt;
  if (std::find(choices.begin(), choices.end(), *s) != choices.end()) return s;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  std::string hint = did_you_mean(*s, choices);
  d_.error(loc(n), "'" + what + "' must be one of " + list + ", got '" + *s + "'" +
                       (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  return std::nullopt;
}

bool YamlReader::expect_map(const YAML::Node& n, const std::string& what) {
  if (n.IsMap()) return true;
  d_.error(loc(n), "'" + what + "' must be a mapping, not " + type_name(n));
  return false;
}

void YamlReader::parse_env(const YAML::Node& n, const std::string& what, std::map<std::string, Text>* env) {
  if (!expect_map(n, what)) return;
  for (const auto& [k, k_at, v] : entries_of(n, {}, "'" + what + "'")) {
    // A Slurm job's script keeps its own state in these (agents/slurm_job.h, review-4 P8).
    if (k.rfind("__ferry_", 0) == 0) {
      d_.error(k_at, what + "." + k +
                         ": names starting with __ferry_ are ferry's own (a Slurm job's script uses "
                         "them); choose another name");
      continue;
    }
    if (auto t = text(v, what + "." + k)) (*env)[k] = *t;
  }
}

void YamlReader::parse_slurm(const YAML::Node& n, Location key, const std::string& what, SlurmOptions* o) {
  o->given = true;
  o->at = key;
  if (!expect_map(n, "slurm")) return;
  for (const auto& [k, k_at, v] : entries_of(n, kSlurmKeys, "'slurm' of " + what)) {
    if (k == "cpus") {
      if (auto c = integer(v, "slurm.cpus", 1, 100000)) o->cpus = static_cast<int>(*c);
    } else if (k == "time") {
      if (auto d = duration(v, "slurm.time")) o->time_s = *d;
    } else if (k == "options") {
      auto add = [&](const YAML::Node& item) {
        auto f = scalar(item, "slurm.options");
        if (!f) return;
        std::string problem = slurm_extra_problem(*f);
        if (problem.empty()) o->extra.push_back(*f);
        else d_.error(loc(item), what + ": slurm.options: " + problem);
      };
      if (v.IsSequence()) {
        for (const auto& item : v) add(item);
      } else {
        add(v);
      }
    } else if (auto s = scalar(v, "slurm." + k)) {
      std::string problem = slurm_value_problem(k, *s);
      if (!problem.empty()) {
        d_.error(loc(v), what + ": slurm." + k + " " + problem);
        continue;
      }
      if (k == "partition") o->partition = *s;
      else if (k == "account") o->account = *s;
      else if (k == "qos") o->qos = *s;
      else if (k == "mem") o->mem = *s;
      else if (k == "gres") o->gres = *s;
    }
  }
}

void YamlReader::read_scalar(const Entries& e, const char* key, std::string* out) {
  if (auto x = find(e, key)) {
    if (auto s = scalar(*x, key)) *out = *s;
  }
}

void YamlReader::read_shell(const Entries& e, const std::string& what, std::string* out) {
  auto x = find(e, "shell");
  if (!x) return;
  auto s = scalar(*x, "shell");
  if (!s) return;
  std::string problem = shell_problem(*s);
  if (problem.empty()) *out = *s;
  else error(loc(*x), what + " shell: " + problem);
}

void YamlReader::read_text(const Entries& e, const char* key, Text* out) {
  if (auto x = find(e, key)) {
    if (auto t = text(*x, key)) *out = *t;
  }
}

}  // namespace ferry::workflow
