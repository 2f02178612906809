#include "workflows/parser.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "base/ssh_ciphers.h"
#include "workflows/byte_size.h"
#include "workflows/duration.h"
#include "workflows/slurm_options.h"
#include "workflows/validate.h"

namespace ferry::workflow {
namespace {

// A smaller log_max would keep too little of a job's output to be of use.
constexpr int64_t kMinLogMaxBytes = int64_t{1} << 20;

const std::vector<std::string> kTopKeys = {"name", "description", "params", "hosts", "stages"};
const std::vector<std::string> kHostKeys = {"transport",   "address", "port",        "user",      "identity",
                                            "known_hosts", "trust",   "ssh_config",  "ciphers",   "workdir",
                                            "env",         "give_up", "description", "scheduler", "slurm"};
const std::vector<std::string> kCommonStageKeys = {"kind", "host", "needs", "env", "outputs", "timeout",
                                                   "log_max", "retries", "retry_backoff", "retry_on", "description"};
const std::vector<std::string> kCommandKeys = {"run", "cwd", "slurm"};
const std::vector<std::string> kSlurmKeys = {"partition", "time", "cpus", "mem", "gres", "account", "qos", "options"};
const std::vector<std::string> kCopyKeys = {"from", "to", "route", "keep_local", "streams"};
const std::vector<std::string> kEvalKeys = {"target",     "drafter",       "reference", "prompts", "max_new_tokens",
                                            "block_size", "device",        "dtype",     "threads", "gate",
                                            "tokenizer",  "prompt_format", "watch",     "slurm",   "hosts"};
const std::vector<std::string> kWatchKeys = {"stage", "from", "pattern", "marker", "fail_on_error"};
const std::vector<std::string> kGateKeys = {"min_tau", "min_ratio_to_reference"};

Location mark_of(const YAML::Node& n) {
  YAML::Mark m = n.Mark();
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

const char* type_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "an undefined value";
  }
}

std::vector<std::string> concat(std::initializer_list<const std::vector<std::string>*> lists) {
  std::vector<std::string> out;
  for (auto* l : lists) out.insert(out.end(), l->begin(), l->end());
  return out;
}

class Parser {
 public:
  explicit Parser(Diagnostics* d) : d_(*d) {}

  Workflow parse(const std::string& path, const std::string& text) {
    Workflow wf;
    wf.path = path;
    wf.source = text;
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      d_.error({e.mark.line + 1, e.mark.column + 1}, "YAML syntax error: " + e.msg);
      return wf;
    } catch (const YAML::Exception& e) {
      d_.error({1, 1}, std::string("YAML error: ") + e.what());
      return wf;
    }
    if (!root.IsMap()) {
      d_.error(root.IsDefined() && !root.IsNull() ? loc(root) : Location{1, 1},
               "a workflow must be a mapping with 'name', 'hosts' and 'stages'");
      return wf;
    }
    std::set<std::string> hinted;
    auto entries = entries_of(root, kTopKeys, "workflow", &hinted);
    if (auto n = find(entries, "name")) {
      if (auto s = scalar(*n, "name")) {
        wf.name = *s;
        wf.name_at = loc(*n);
        check_name("workflow", *s, loc(*n));
      }
    } else if (!hinted.count("name")) {  // a misspelt 'name' was reported already
      d_.error(loc(root), "missing required field 'name'");
    }
    if (auto n = find(entries, "params")) parse_params(*n, &wf);
    if (auto n = find(entries, "hosts")) parse_hosts(*n, &wf);
    if (auto n = find(entries, "stages")) {
      parse_stages(*n, &wf);
    } else if (!hinted.count("stages")) {
      d_.error(loc(root), "missing required field 'stages'");
    }
    return wf;
  }

 private:
  struct Entry {
    std::string key;
    Location at;  // of the key
    YAML::Node node;
  };
  using Entries = std::vector<Entry>;

  // Where a node is. An empty value (`key:` and nothing) has no text of its
  // own and yaml-cpp marks it where the next token starts, often lines further
  // down; such a value is placed at its key instead.
  Location loc(const YAML::Node& n) const {
    if (n.IsNull()) {
      for (const auto& [node, at] : empty_values_) {
        if (node.is(n)) return at;
      }
    }
    return mark_of(n);
  }

  static bool valid_name(const std::string& s) {
    if (s.empty() || s.size() > 100) return false;
    for (char c : s) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
      if (!ok) return false;
    }
    return true;
  }

  // Every name a workflow gives (its own, a param's, host's, stage's, output's) obeys
  // one rule; false, with the error reported, when `name` does not.
  bool check_name(const std::string& kind, const std::string& name, Location at) {
    if (valid_name(name)) return true;
    d_.error(at, kind + " name '" + name + "' may use only letters, digits, '_' and '-'");
    return false;
  }

  // A param, host or stage named by its key, the name checked.
  template <typename T>
  T named_entry(const std::string& kind, const std::string& name, Location at) {
    T entry;
    entry.name = name;
    entry.at = at;
    check_name(kind, name, at);
    return entry;
  }

  // The keys of a mapping, checked against `allowed`: unknown keys get a
  // did-you-mean, duplicates are reported at their second place. The keys
  // suggested go to `hinted`, so a misspelt required key is reported once.
  Entries entries_of(const YAML::Node& map, const std::vector<std::string>& allowed, const std::string& what,
                     std::set<std::string>* hinted = nullptr) {
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

  static Location key_at(const Entries& e, const std::string& key) {
    for (const auto& entry : e) {
      if (entry.key == key) return entry.at;
    }
    return {};
  }

  static const YAML::Node* find(const Entries& e, const std::string& key) {
    for (const auto& entry : e) {
      if (entry.key == key) return &entry.node;
    }
    return nullptr;
  }

  std::optional<std::string> scalar(const YAML::Node& n, const std::string& what) {
    if (!n.IsScalar()) {
      d_.error(loc(n), "'" + what + "' must be a scalar, not " + type_name(n));
      return std::nullopt;
    }
    return n.Scalar();
  }

  std::optional<Text> text(const YAML::Node& n, const std::string& what) {
    auto s = scalar(n, what);
    if (!s) return std::nullopt;
    return Text{*s, loc(n)};
  }

  std::optional<long long> integer(const YAML::Node& n, const std::string& what, long long min, long long max) {
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
      d_.error(loc(n), "'" + what + "' must be between " + std::to_string(min) + " and " + std::to_string(max) +
                           ", got " + *s);
      return std::nullopt;
    }
    return v;
  }

  std::optional<double> number(const YAML::Node& n, const std::string& what) {
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

  std::optional<double> duration(const YAML::Node& n, const std::string& what) {
    auto s = scalar(n, what);
    if (!s) return std::nullopt;
    auto v = parse_duration(*s);
    if (!v) d_.error(loc(n), "'" + what + "' must be a duration like 30s, 5m, 1h or 500ms, got '" + *s + "'");
    return v;
  }

  std::optional<int64_t> byte_size(const YAML::Node& n, const std::string& what, int64_t min) {
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

  std::optional<std::string> one_of(const YAML::Node& n, const std::string& what,
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

  bool expect_map(const YAML::Node& n, const std::string& what) {
    if (n.IsMap()) return true;
    d_.error(loc(n), "'" + what + "' must be a mapping, not " + type_name(n));
    return false;
  }

  void parse_env(const YAML::Node& n, const std::string& what, std::map<std::string, Text>* env) {
    if (!expect_map(n, what)) return;
    for (const auto& [k, k_at, v] : entries_of(n, {}, "'" + what + "'")) {
      if (auto t = text(v, what + "." + k)) (*env)[k] = *t;
    }
  }

  void parse_params(const YAML::Node& n, Workflow* wf) {
    if (n.IsNull()) return;
    if (!expect_map(n, "params")) return;
    for (const auto& [k, k_at, v] : entries_of(n, {}, "'params'")) {
      Param p = named_entry<Param>("param", k, k_at);
      if (v.IsNull()) {
        p.default_value = "";
      } else if (auto s = scalar(v, "params." + k)) {
        p.default_value = *s;
      }
      wf->params.push_back(p);
    }
  }

  void parse_hosts(const YAML::Node& n, Workflow* wf) {
    if (n.IsNull()) return;
    if (!expect_map(n, "hosts")) return;
    for (const auto& [name, name_at, v] : entries_of(n, {}, "'hosts'")) {
      Host h = named_entry<Host>("host", name, name_at);
      std::string what = "host '" + name + "'";
      if (v.IsNull()) {  // `name:` alone is a local host with defaults
        wf->hosts.push_back(h);
        continue;
      }
      if (!expect_map(v, "hosts." + name)) continue;
      auto e = entries_of(v, kHostKeys, what);
      if (auto x = find(e, "transport")) {
        if (auto t = one_of(*x, "transport", {"local", "ssh"}))
          h.transport = *t == "ssh" ? Transport::kSsh : Transport::kLocal;
      }
      if (auto x = find(e, "address")) {
        if (auto s = scalar(*x, "address")) h.address = *s;
      }
      if (auto x = find(e, "port")) {
        if (auto p = integer(*x, "port", 1, 65535)) h.port = static_cast<int>(*p);
      }
      if (auto x = find(e, "user")) {
        if (auto s = scalar(*x, "user")) h.user = *s;
      }
      if (auto x = find(e, "identity")) {
        if (auto s = scalar(*x, "identity")) h.identity = *s;
      }
      if (auto x = find(e, "known_hosts")) {
        if (auto s = scalar(*x, "known_hosts")) h.known_hosts = *s;
      }
      if (auto x = find(e, "ssh_config")) {
        if (auto s = scalar(*x, "ssh_config")) h.ssh_config = *s;
      }
      if (auto x = find(e, "trust")) {
        if (auto t = one_of(*x, "trust", {"known-hosts", "first-use"})) h.trust_first_use = *t == "first-use";
      }
      if (auto x = find(e, "ciphers")) {
        if (auto s = scalar(*x, "ciphers")) {
          std::string problem = cipher_list_problem(*s);
          if (problem.empty()) h.ciphers = *s;
          else d_.error(loc(*x), what + " ciphers: " + problem);
        }
      }
      if (auto x = find(e, "workdir")) {
        if (auto t = text(*x, "workdir")) h.workdir = *t;
      }
      if (auto x = find(e, "env")) parse_env(*x, "env", &h.env);
      if (auto x = find(e, "give_up")) {
        if (auto d = duration(*x, "give_up")) h.give_up_s = *d;
      }
      if (auto x = find(e, "scheduler")) {
        if (auto t = one_of(*x, "scheduler", {"none", "slurm"}))
          h.scheduler = *t == "slurm" ? Scheduler::kSlurm : Scheduler::kNone;
      }
      if (auto x = find(e, "slurm")) {
        parse_slurm(*x, key_at(e, "slurm"), what, &h.slurm);
        if (h.scheduler != Scheduler::kSlurm) {
          d_.error(key_at(e, "slurm"), what + " has 'slurm' options but no 'scheduler: slurm'");
        }
      }
      if (h.transport == Transport::kSsh && h.address.empty()) {
        d_.error(h.at, what + " uses transport ssh but has no 'address'");
      }
      if (h.transport == Transport::kLocal) {
        for (const char* k : {"address", "user", "identity", "known_hosts", "trust", "ssh_config", "ciphers"}) {
          if (find(e, k))
            d_.error(key_at(e, k), "'" + std::string(k) + "' applies to ssh hosts only; " + what + " is local");
        }
      }
      wf->hosts.push_back(h);
    }
  }

  // An exit code, or a Slurm end by name (slurm_options.h).
  void retry_on_item(const YAML::Node& item, Stage* s) {
    if (item.IsScalar() && !item.Scalar().empty() && std::isalpha(static_cast<unsigned char>(item.Scalar()[0]))) {
      const auto& causes = slurm_retry_causes();
      if (auto c = one_of(item, "retry_on", causes)) s->retry_on_causes.push_back(*c);
      return;
    }
    if (auto c = integer(item, "retry_on", 0, 255)) s->retry_on.push_back(static_cast<int>(*c));
  }

  // `slurm:` of a host (its stages' defaults) or of a stage: sbatch options.
  void parse_slurm(const YAML::Node& n, Location key, const std::string& what, SlurmOptions* o) {
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

  void parse_needs(const YAML::Node& n, Stage* s) {
    std::set<std::string> seen;
    auto add = [&](const YAML::Node& item) {
      auto v = scalar(item, "needs");
      if (!v) return;
      if (!seen.insert(*v).second) {
        d_.error(loc(item), "stage '" + s->name + "' lists '" + *v + "' twice in needs");
        return;
      }
      s->needs.push_back(*v);
      s->needs_at.push_back(loc(item));
    };
    if (n.IsScalar()) {
      add(n);
    } else if (n.IsSequence()) {
      for (const auto& item : n) add(item);
    } else if (!n.IsNull()) {
      d_.error(loc(n), "'needs' must be a stage name or a list of them, not " + std::string(type_name(n)));
    }
  }

  void parse_outputs(const YAML::Node& n, Stage* s) {
    std::set<std::string> seen;
    auto add = [&](const std::string& name, Location at, std::optional<Text> value) {
      if (!check_name("output", name, at)) return;
      if (!seen.insert(name).second) {
        d_.error(at, "duplicate output '" + name + "' in stage '" + s->name + "'");
        return;
      }
      s->outputs.push_back({name, std::move(value), at});
    };
    if (n.IsSequence()) {
      for (const auto& item : n) {
        if (auto v = scalar(item, "outputs")) add(*v, loc(item), std::nullopt);
      }
    } else if (n.IsMap()) {
      for (const auto& [k, k_at, v] : entries_of(n, {}, "'outputs' of stage '" + s->name + "'")) {
        if (v.IsNull()) add(k, k_at, std::nullopt);
        else if (auto t = text(v, "outputs." + k)) add(k, k_at, *t);
      }
    } else if (!n.IsNull()) {
      d_.error(loc(n), "'outputs' must be a list of names or a mapping of name: value");
    }
  }

  std::optional<Endpoint> endpoint(const YAML::Node& n, const std::string& what) {
    auto t = text(n, what);
    if (!t) return std::nullopt;
    size_t colon = t->value.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == t->value.size()) {
      d_.error(t->at, "'" + what + "' must be HOST:PATH, got '" + t->value + "'");
      return std::nullopt;
    }
    Endpoint e;
    e.host = t->value.substr(0, colon);
    e.path = Text{t->value.substr(colon + 1), t->at};
    return e;
  }

  void parse_stages(const YAML::Node& n, Workflow* wf) {
    if (!expect_map(n, "stages")) return;
    if (n.size() == 0) d_.error(loc(n), "a workflow needs at least one stage");
    for (const auto& [name, name_at, v] : entries_of(n, {}, "'stages'")) {
      Stage s = named_entry<Stage>("stage", name, name_at);
      std::string what = "stage '" + name + "'";
      if (!v.IsMap()) {
        d_.error(v.IsNull() ? s.at : loc(v), what + " must be a mapping with at least 'run' or 'kind'");
        continue;
      }
      // The kind decides which keys are allowed, so read it first.
      std::string kind = "command";
      if (v["kind"] && v["kind"].IsScalar()) kind = v["kind"].Scalar();
      std::vector<std::string> allowed = concat({&kCommonStageKeys, &kCommandKeys, &kCopyKeys, &kEvalKeys});
      if (kind == "command") allowed = concat({&kCommonStageKeys, &kCommandKeys});
      else if (kind == "copy") allowed = concat({&kCommonStageKeys, &kCopyKeys});
      else if (kind == "eval") allowed = concat({&kCommonStageKeys, &kEvalKeys});
      std::set<std::string> hinted;
      auto e = entries_of(v, allowed, what + " (kind " + kind + ")", &hinted);
      bool kind_known = true;
      if (auto x = find(e, "kind")) {
        if (auto k = one_of(*x, "kind", {"command", "copy", "eval"})) {
          s.kind = *k == "copy" ? StageKind::kCopy : *k == "eval" ? StageKind::kEval : StageKind::kCommand;
        } else {
          kind_known = false;  // which fields are required is unknown; don't guess
        }
      }
      parse_common_fields(e, what, &s);
      parse_command_fields(e, &s);
      parse_copy_fields(e, &s);
      parse_eval_fields(e, what, &s);
      if (kind_known) require_kind_fields(e, hinted, s);
      wf->stages.push_back(std::move(s));
    }
  }

  // Keys every kind has: where and when it runs, its environment, retries, Slurm options.
  void parse_common_fields(const Entries& e, const std::string& what, Stage* stage) {
    Stage& s = *stage;
    if (auto x = find(e, "host")) {
      if (auto h = scalar(*x, "host")) s.host = *h;
      s.host_at = loc(*x);
    }
    if (auto x = find(e, "needs")) parse_needs(*x, &s);
    if (auto x = find(e, "env")) parse_env(*x, "env", &s.env);
    if (auto x = find(e, "outputs")) parse_outputs(*x, &s);
    if (auto x = find(e, "timeout")) {
      if (auto d = duration(*x, "timeout")) s.timeout_s = *d;
    }
    if (auto x = find(e, "log_max")) {
      if (auto b = byte_size(*x, "log_max", kMinLogMaxBytes)) s.log_max_bytes = *b;
    }
    if (auto x = find(e, "retries")) {
      if (auto r = integer(*x, "retries", 0, 100)) s.retries = static_cast<int>(*r);
    }
    if (auto x = find(e, "retry_backoff")) {
      if (auto d = duration(*x, "retry_backoff")) s.retry_backoff_s = *d;
    }
    if (auto x = find(e, "retry_on")) {
      if (x->IsSequence()) {
        for (const auto& item : *x) retry_on_item(item, &s);
      } else {
        retry_on_item(*x, &s);
      }
    }
    if (auto x = find(e, "slurm")) parse_slurm(*x, key_at(e, "slurm"), what, &s.slurm);
  }

  // A command stage's keys.
  void parse_command_fields(const Entries& e, Stage* stage) {
    Stage& s = *stage;
    if (auto x = find(e, "run")) {
      if (auto t = text(*x, "run")) s.run = *t;
    }
    if (auto x = find(e, "cwd")) {
      if (auto t = text(*x, "cwd")) s.cwd = *t;
    }
  }

  // A copy stage's keys.
  void parse_copy_fields(const Entries& e, Stage* stage) {
    Stage& s = *stage;
    if (auto x = find(e, "from")) {
      if (auto ep = endpoint(*x, "from")) s.from = *ep;
    }
    if (auto x = find(e, "to")) {
      if (auto ep = endpoint(*x, "to")) s.to = *ep;
    }
    if (auto x = find(e, "route")) {
      if (auto r = one_of(*x, "route", {"auto", "direct", "relay"})) s.route = *parse_copy_route(*r);
      s.route_at = loc(*x);
    }
    if (auto x = find(e, "keep_local")) {
      if (auto t = text(*x, "keep_local")) s.keep_local = *t;
    }
    if (auto x = find(e, "streams")) {
      if (auto r = integer(*x, "streams", 1, 64)) s.streams = static_cast<int>(*r);
    }
  }

  // An eval stage's keys: its checkpoints and prompts, how it decodes, its gate, a watch.
  void parse_eval_fields(const Entries& e, const std::string& what, Stage* stage) {
    Stage& s = *stage;
    for (auto [key, field] : {std::pair{"target", &s.target}, {"drafter", &s.drafter},
                              {"reference", &s.reference}, {"prompts", &s.prompts},
                              {"tokenizer", &s.tokenizer}}) {
      if (auto x = find(e, key)) {
        if (auto t = text(*x, key)) *field = *t;
      }
    }
    if (auto x = find(e, "max_new_tokens")) {
      if (auto r = integer(*x, "max_new_tokens", 1, 1 << 20)) s.max_new_tokens = static_cast<int>(*r);
    }
    if (auto x = find(e, "block_size")) {
      if (auto r = integer(*x, "block_size", 1, 1024)) s.block_size = static_cast<int>(*r);
    }
    if (auto x = find(e, "device")) {
      if (auto r = one_of(*x, "device", {"cpu", "cuda"})) s.device = *r;
    }
    if (auto x = find(e, "prompt_format")) {
      if (auto r = one_of(*x, "prompt_format", {"raw", "chat", "chat-no-think"})) s.prompt_format = *r;
    }
    if (auto x = find(e, "dtype")) {
      if (auto r = one_of(*x, "dtype", {"auto", "float32", "bfloat16", "float16"})) s.dtype = *r;
    }
    if (auto x = find(e, "threads")) {
      if (auto r = integer(*x, "threads", 0, 1024)) s.threads = static_cast<int>(*r);
    }
    if (auto x = find(e, "gate")) {
      if (expect_map(*x, "gate")) {
        auto g = entries_of(*x, kGateKeys, "'gate' of " + what);
        if (auto y = find(g, "min_tau")) s.gate.min_tau = number(*y, "min_tau");
        if (auto y = find(g, "min_ratio_to_reference")) {
          s.gate.min_ratio_to_reference = number(*y, "min_ratio_to_reference");
          if (!find(e, "reference")) {
            d_.error(key_at(g, "min_ratio_to_reference"),
                     what + ": gate 'min_ratio_to_reference' needs a 'reference' drafter");
          }
        }
      }
    }
    if (auto x = find(e, "watch")) parse_watch(*x, what, &s.watch);
    if (auto x = find(e, "hosts")) {  // as written: workflows/eval_shards.h checks and expands it
      s.hosts_at = loc(*x);
      if (!x->IsSequence()) d_.error(s.hosts_at, what + ": 'hosts' must be a list of host names, not " + type_name(*x));
      for (const auto& item : x->IsSequence() ? *x : YAML::Node()) {
        if (auto h = scalar(item, "hosts")) s.hosts.push_back(*h);
      }
    }
  }

  void parse_watch(const YAML::Node& n, const std::string& what, CheckpointWatch* w) {
    if (!expect_map(n, "watch")) return;
    auto g = entries_of(n, kWatchKeys, "'watch' of " + what);
    if (auto y = find(g, "stage")) {
      if (auto t = text(*y, "stage")) w->stage = t->value, w->stage_at = t->at;
    } else {
      d_.error(loc(n), what + ": 'watch' needs 'stage' (the training stage it follows)");
    }
    if (auto y = find(g, "from")) {
      if (auto ep = endpoint(*y, "from")) w->from = *ep;
    } else {
      d_.error(loc(n), what + ": 'watch' needs 'from' (HOST:FOLDER where the checkpoints appear)");
    }
    if (auto y = find(g, "pattern")) {
      if (auto t = text(*y, "pattern")) w->pattern = t->value;
      if (w->pattern.empty() || w->pattern.find('/') != std::string::npos) {
        d_.error(loc(*y), what + ": watch 'pattern' must be a folder name pattern without '/'");
      }
    }
    if (auto y = find(g, "marker")) {
      if (auto t = text(*y, "marker")) w->marker = t->value;
    }
    if (auto y = find(g, "fail_on_error")) {
      if (auto t = text(*y, "fail_on_error")) {
        if (t->value == "true" || t->value == "false") w->fail_on_error = t->value == "true";
        else d_.error(loc(*y), what + ": watch 'fail_on_error' must be true or false, got '" + t->value + "'");
      }
    }
  }

  void require_kind_fields(const Entries& e, const std::set<std::string>& hinted, const Stage& s) {
    std::string what = "stage '" + s.name + "'";
    auto need = [&](const char* key) {
      if (!find(e, key) && !hinted.count(key)) d_.error(s.at, what + " is missing required field '" + key + "'");
    };
    switch (s.kind) {
      case StageKind::kCommand: need("run"); break;
      case StageKind::kCopy: need("from"); need("to"); break;
      case StageKind::kEval: need("target"); need("drafter"); need("prompts"); break;
    }
    if (s.kind == StageKind::kCopy && find(e, "host")) {
      d_.error(s.host_at, what + ": 'host' does not apply to copy stages (they name their hosts in from/to)");
    }
  }

  Diagnostics& d_;
  std::vector<std::pair<YAML::Node, Location>> empty_values_;  // see loc()
};

}  // namespace

Workflow parse_workflow_collecting(const std::string& path, const std::string& text, Diagnostics* diagnostics) {
  Workflow wf = Parser(diagnostics).parse(path, text);
  validate_workflow(wf, diagnostics);
  return wf;
}

Result<Workflow> parse_workflow(const std::string& path, const std::string& text) {
  Diagnostics d(path);
  Workflow wf = parse_workflow_collecting(path, text, &d);
  if (!d.empty()) {
    std::string msg = d.to_string();
    if (!msg.empty() && msg.back() == '\n') msg.pop_back();
    return invalid_argument(msg);
  }
  return wf;
}

Result<Workflow> load_workflow(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(path + ": cannot open workflow file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_workflow(path, ss.str());
}

}  // namespace ferry::workflow
