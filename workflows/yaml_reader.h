// YamlReader: the typed reads the workflow parser is made of — a mapping's keys checked
// against those allowed, scalars, integers, durations, sizes, choices, names — each
// reporting a wrong value to the Diagnostics at its place and giving nothing back. The
// parser of stages (parser.cc) and of hosts (host_parser.h) share one, so a value's place
// is known to both (loc()). With yaml-cpp: only the parser's files include this.
// One parse, one thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "workflows/diagnostics.h"
#include "workflows/model.h"

namespace ferry::workflow {

/// "nothing", "a scalar", "a list", "a mapping": for messages.
const char* type_name(const YAML::Node& n);

class YamlReader {
 public:
  struct Entry {
    std::string key;
    Location at;  // of the key
    YAML::Node node;
  };
  using Entries = std::vector<Entry>;

  explicit YamlReader(Diagnostics* d) : d_(*d) {}

  void error(Location at, const std::string& message) { d_.error(at, message); }

  /// Where a node is. An empty value (`key:` and nothing) has no text of its own and
  /// yaml-cpp marks it where the next token starts, often lines further down; such a
  /// value is placed at its key instead.
  Location loc(const YAML::Node& n) const;

  /// Every name a workflow gives (its own, a param's, host's, stage's, output's) obeys
  /// one rule; false, with the error reported, when `name` does not.
  bool check_name(const std::string& kind, const std::string& name, Location at);

  /// A param, host or stage named by its key, the name checked.
  template <typename T>
  T named_entry(const std::string& kind, const std::string& name, Location at) {
    T entry;
    entry.name = name;
    entry.at = at;
    check_name(kind, name, at);
    return entry;
  }

  /// The keys of a mapping, checked against `allowed` (empty: any): unknown keys get a
  /// did-you-mean, duplicates are reported at their second place. The keys suggested go
  /// to `hinted`, so a misspelt required key is reported once.
  Entries entries_of(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& what,
                     std::set<std::string>* hinted = nullptr);
  static Location key_at(const Entries& e, const std::string& key);
  static const YAML::Node* find(const Entries& e, const std::string& key);

  std::optional<std::string> scalar(const YAML::Node& n, const std::string& what);
  std::optional<Text> text(const YAML::Node& n, const std::string& what);
  std::optional<long long> integer(const YAML::Node& n, const std::string& what, long long min, long long max);
  std::optional<double> number(const YAML::Node& n, const std::string& what);
  std::optional<double> duration(const YAML::Node& n, const std::string& what);
  std::optional<int64_t> byte_size(const YAML::Node& n, const std::string& what, int64_t min);
  std::optional<std::string> one_of(const YAML::Node& n, const std::string& what,
                                    const std::vector<std::string>& choices);
  bool expect_map(const YAML::Node& n, const std::string& what);

  /// `*out` = the scalar (or text) under `key`, when the key is there and its value reads.
  void read_scalar(const Entries& e, const char* key, std::string* out);
  /// `shell:` (shell_choice.h), checked; `what` names its owner in an error.
  void read_shell(const Entries& e, const std::string& what, std::string* out);
  void read_text(const Entries& e, const char* key, Text* out);

  /// `env:` of a host or a stage: NAME: template.
  void parse_env(const YAML::Node& n, const std::string& what, std::map<std::string, Text>* env);
  /// `slurm:` of a host (its stages' defaults) or of a stage: sbatch options.
  void parse_slurm(const YAML::Node& n, Location key, const std::string& what, SlurmOptions* o);

 private:
  Diagnostics& d_;
  std::vector<std::pair<YAML::Node, Location>> empty_values_;  // see loc()
};

}  // namespace ferry::workflow
