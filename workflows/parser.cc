#include "workflows/parser.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "workflows/host_parser.h"
#include "workflows/slurm_options.h"
#include "workflows/validate.h"
#include "workflows/yaml_reader.h"

namespace ferry::workflow {
namespace {

// A smaller log_max would keep too little of a job's output to be of use.
constexpr int64_t kMinLogMaxBytes = int64_t{1} << 20;

const std::vector<std::string> kTopKeys = {"name", "description", "params", "hosts", "stages", "shell"};
const std::vector<std::string> kCommonStageKeys = {"kind", "host", "needs", "env", "outputs", "timeout",
                                                   "log_max", "retries", "retry_backoff", "retry_on", "description"};
const std::vector<std::string> kCommandKeys = {"run", "cwd", "slurm", "shell"};
const std::vector<std::string> kCopyKeys = {"from", "to", "route", "keep_local", "streams"};
const std::vector<std::string> kEvalKeys = {"target",      "drafter",       "reference", "prompts", "max_new_tokens",
                                            "block_size",  "device",        "dtype",     "threads", "gate",
                                            "tokenizer",   "prompt_format", "watch",     "slurm",   "hosts",
                                            "temperature", "seed"};
// The engine's limit too (jobs/eval/run/eval_spec.h), which workflows/ does not include.
constexpr double kMaxTemperature = 100;
const std::vector<std::string> kWatchKeys = {"stage", "from", "pattern", "marker", "fail_on_error"};
const std::vector<std::string> kGateKeys = {"min_tau", "min_ratio_to_reference"};

std::vector<std::string> concat(std::initializer_list<const std::vector<std::string>*> lists) {
  std::vector<std::string> out;
  for (auto* l : lists) out.insert(out.end(), l->begin(), l->end());
  return out;
}

class Parser : public YamlReader {
 public:
  explicit Parser(Diagnostics* d) : YamlReader(d) {}

  Workflow parse(const std::string& path, const std::string& text) {
    Workflow wf;
    wf.path = path;
    wf.source = text;
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      error({e.mark.line + 1, e.mark.column + 1}, "YAML syntax error: " + e.msg);
      return wf;
    } catch (const YAML::Exception& e) {
      error({1, 1}, std::string("YAML error: ") + e.what());
      return wf;
    }
    if (!root.IsMap()) {
      error(root.IsDefined() && !root.IsNull() ? loc(root) : Location{1, 1},
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
      error(loc(root), "missing required field 'name'");
    }
    read_shell(entries, "workflow", &wf.shell);
    if (auto n = find(entries, "params")) parse_params(*n, &wf);
    if (auto n = find(entries, "hosts")) parse_hosts(*this, *n, &wf);
    if (auto n = find(entries, "stages")) {
      parse_stages(*n, &wf);
    } else if (!hinted.count("stages")) {
      error(loc(root), "missing required field 'stages'");
    }
    return wf;
  }

 private:
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

  // An exit code, or a Slurm end by name (slurm_options.h).
  void retry_on_item(const YAML::Node& item, Stage* s) {
    if (item.IsScalar() && !item.Scalar().empty() && std::isalpha(static_cast<unsigned char>(item.Scalar()[0]))) {
      const auto& causes = slurm_retry_causes();
      if (auto c = one_of(item, "retry_on", causes)) s->retry_on_causes.push_back(*c);
      return;
    }
    if (auto c = integer(item, "retry_on", 0, 255)) s->retry_on.push_back(static_cast<int>(*c));
  }

  void parse_needs(const YAML::Node& n, Stage* s) {
    std::set<std::string> seen;
    auto add = [&](const YAML::Node& item) {
      auto v = scalar(item, "needs");
      if (!v) return;
      if (!seen.insert(*v).second) {
        error(loc(item), "stage '" + s->name + "' lists '" + *v + "' twice in needs");
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
      error(loc(n), "'needs' must be a stage name or a list of them, not " + std::string(type_name(n)));
    }
  }

  void parse_outputs(const YAML::Node& n, Stage* s) {
    std::set<std::string> seen;
    auto add = [&](const std::string& name, Location at, std::optional<Text> value) {
      if (!check_name("output", name, at)) return;
      if (!seen.insert(name).second) {
        error(at, "duplicate output '" + name + "' in stage '" + s->name + "'");
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
      error(loc(n), "'outputs' must be a list of names or a mapping of name: value");
    }
  }

  std::optional<Endpoint> endpoint(const YAML::Node& n, const std::string& what) {
    auto t = text(n, what);
    if (!t) return std::nullopt;
    size_t colon = t->value.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == t->value.size()) {
      error(t->at, "'" + what + "' must be HOST:PATH, got '" + t->value + "'");
      return std::nullopt;
    }
    Endpoint e;
    e.host = t->value.substr(0, colon);
    e.path = Text{t->value.substr(colon + 1), t->at};
    return e;
  }

  void parse_stages(const YAML::Node& n, Workflow* wf) {
    if (!expect_map(n, "stages")) return;
    if (n.size() == 0) error(loc(n), "a workflow needs at least one stage");
    for (const auto& [name, name_at, v] : entries_of(n, {}, "'stages'")) {
      Stage s = named_entry<Stage>("stage", name, name_at);
      std::string what = "stage '" + name + "'";
      if (!v.IsMap()) {
        error(v.IsNull() ? s.at : loc(v), what + " must be a mapping with at least 'run' or 'kind'");
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
    read_text(e, "run", &stage->run);
    read_text(e, "cwd", &stage->cwd);
    read_shell(e, "stage '" + stage->name + "'", &stage->shell);
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
    read_text(e, "keep_local", &s.keep_local);
    if (auto x = find(e, "streams")) {
      if (auto r = integer(*x, "streams", 1, 64)) s.streams = static_cast<int>(*r);
    }
  }

  // `prompts:` one file, or a map of named datasets, each a file (templates allowed).
  void parse_prompts(const Entries& e, const std::string& what, Stage* s) {
    const YAML::Node* x = find(e, "prompts");
    if (x == nullptr) return;
    if (!x->IsMap()) {
      read_text(e, "prompts", &s->prompts);
      return;
    }
    const auto sets = entries_of(*x, {}, "'prompts' of " + what);
    if (sets.empty()) error(loc(*x), what + ": 'prompts' names no dataset");
    for (const auto& [name, name_at, v] : sets) {
      check_name("dataset", name, name_at);
      if (auto t = text(v, "prompts." + name)) {
        if (t->empty()) error(name_at, what + ": dataset '" + name + "' names no prompts file");
        s->prompt_sets.emplace_back(name, *t);
      }
    }
  }

  // `temperature:` (0 = greedy; the target's tokens sampled above it) and `seed:`.
  void parse_sampling(const Entries& e, Stage* s) {
    if (auto x = find(e, "temperature")) {
      if (auto t = number(*x, "temperature")) {
        if (!(*t >= 0 && *t <= kMaxTemperature)) {  // NaN too
          error(loc(*x), "'temperature' must be between 0 (greedy) and 100, got " + x->Scalar());
        } else {
          s->temperature = *t;
        }
      }
    }
    if (auto x = find(e, "seed")) {
      if (auto r = integer(*x, "seed", 0, std::numeric_limits<long long>::max())) s->seed = static_cast<uint64_t>(*r);
    }
  }

  // An eval stage's keys: its checkpoints and prompts, how it decodes, its gate, a watch.
  void parse_eval_fields(const Entries& e, const std::string& what, Stage* stage) {
    Stage& s = *stage;
    for (auto [key, field] : {std::pair{"target", &s.target}, {"drafter", &s.drafter},
                              {"reference", &s.reference}, {"tokenizer", &s.tokenizer}}) {
      read_text(e, key, field);
    }
    parse_prompts(e, what, &s);
    if (auto x = find(e, "max_new_tokens")) {
      if (auto r = integer(*x, "max_new_tokens", 1, 1 << 20)) s.max_new_tokens = static_cast<int>(*r);
    }
    if (auto x = find(e, "block_size")) {
      if (auto r = integer(*x, "block_size", 1, 1024)) s.block_size = static_cast<int>(*r);
    }
    if (auto x = find(e, "device")) {
      // `gpu` is what people write; libtorch calls it cuda.
      if (auto r = one_of(*x, "device", {"cpu", "cuda", "gpu"})) s.device = *r == "gpu" ? "cuda" : *r;
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
    parse_sampling(e, &s);
    if (auto x = find(e, "gate")) {
      if (expect_map(*x, "gate")) {
        auto g = entries_of(*x, kGateKeys, "'gate' of " + what);
        if (auto y = find(g, "min_tau")) s.gate.min_tau = number(*y, "min_tau");
        if (auto y = find(g, "min_ratio_to_reference")) {
          s.gate.min_ratio_to_reference = number(*y, "min_ratio_to_reference");
          if (!find(e, "reference")) {
            error(key_at(g, "min_ratio_to_reference"),
                  what + ": gate 'min_ratio_to_reference' needs a 'reference' drafter");
          }
        }
      }
    }
    if (auto x = find(e, "watch")) parse_watch(*x, what, &s.watch);
    if (auto x = find(e, "hosts")) {  // as written: workflows/eval_shards.h checks and expands it
      s.hosts_at = loc(*x);
      if (!x->IsSequence()) error(s.hosts_at, what + ": 'hosts' must be a list of host names, not " + type_name(*x));
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
      error(loc(n), what + ": 'watch' needs 'stage' (the training stage it follows)");
    }
    if (auto y = find(g, "from")) {
      if (auto ep = endpoint(*y, "from")) w->from = *ep;
    } else {
      error(loc(n), what + ": 'watch' needs 'from' (HOST:FOLDER where the checkpoints appear)");
    }
    if (auto y = find(g, "pattern")) {
      if (auto t = text(*y, "pattern")) w->pattern = t->value;
      if (w->pattern.empty() || w->pattern.find('/') != std::string::npos) {
        error(loc(*y), what + ": watch 'pattern' must be a folder name pattern without '/'");
      }
    }
    if (auto y = find(g, "marker")) {
      if (auto t = text(*y, "marker")) w->marker = t->value;
    }
    if (auto y = find(g, "fail_on_error")) {
      if (auto t = text(*y, "fail_on_error")) {
        if (t->value == "true" || t->value == "false") w->fail_on_error = t->value == "true";
        else error(loc(*y), what + ": watch 'fail_on_error' must be true or false, got '" + t->value + "'");
      }
    }
  }

  void require_kind_fields(const Entries& e, const std::set<std::string>& hinted, const Stage& s) {
    std::string what = "stage '" + s.name + "'";
    auto need = [&](const char* key) {
      if (!find(e, key) && !hinted.count(key)) error(s.at, what + " is missing required field '" + key + "'");
    };
    switch (s.kind) {
      case StageKind::kCommand: need("run"); break;
      case StageKind::kCopy: need("from"); need("to"); break;
      case StageKind::kEval: need("target"); need("drafter"); need("prompts"); break;
    }
    if (s.kind == StageKind::kCopy && find(e, "host")) {
      error(s.host_at, what + ": 'host' does not apply to copy stages (they name their hosts in from/to)");
    }
  }
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
