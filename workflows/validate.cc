#include "workflows/validate.h"

#include <algorithm>
#include <set>

#include "base/file_util.h"
#include "workflows/dag.h"
#include "workflows/eval_shards.h"
#include "workflows/shell_context.h"
#include "workflows/template.h"

namespace ferry::workflow {
namespace {

std::vector<std::string> host_names(const Workflow& wf) {
  std::vector<std::string> v;
  for (const auto& h : wf.hosts) v.push_back(h.name);
  return v;
}

std::vector<std::string> stage_names(const Workflow& wf) {
  std::vector<std::string> v;
  for (const auto& s : wf.stages) v.push_back(s.name);
  return v;
}

std::string hint(const std::string& word, const std::vector<std::string>& candidates) {
  return did_you_mean_hint(word, candidates);
}

class Checker {
 public:
  Checker(const Workflow& wf, Diagnostics* d) : wf_(wf), d_(*d) {}

  // `stage` is the stage whose field holds the text (nullptr for host fields,
  // which may use params and run.id only).
  void check_text(const Text& t, const Stage* stage, const std::string& field) {
    if (t.value.find("${{") == std::string::npos) return;
    auto refs = parse_references(t.value);
    if (!refs.ok()) {
      d_.error(t.at, field + ": " + refs.status().message());
      return;
    }
    for (const auto& r : *refs) check_reference(r, t.at, stage, field);
  }

  // A template where a single-quoted word is not safe (shell_context.h).
  void check_run_quoting(const Text& t, const std::string& field) {
    for (const auto& u : unsafe_templates(t.value)) {
      size_t end = t.value.find("}}", u.offset);
      std::string expr = t.value.substr(u.offset, end == std::string::npos ? std::string::npos : end + 2 - u.offset);
      int k = static_cast<int>(std::count(t.value.begin(), t.value.begin() + static_cast<long>(u.offset), '\n'));
      const std::string& w = u.where;
      bool numeric = w == "arithmetic" || w == "[[ ]]" || w == "the arguments of let or declare -i" ||
                     w == "a ${…} expansion" || w == "an array subscript";
      std::string inner = expr.size() > 6 ? expr.substr(3, expr.size() - 5) : expr;
      while (!inner.empty() && inner.front() == ' ') inner.erase(0, 1);
      while (!inner.empty() && inner.back() == ' ') inner.pop_back();
      std::string fix =
          numeric ? "for a number write ${{ int(" + inner +
                        ") }}, which fails the stage unless the value is an integer, or pass it through the "
                        "stage's env: and use \"$N\" as a word (check it is a number before arithmetic)"
          : w == "a here-document" ? "pass it to the command as a bare argument or through the stage's env instead"
          : w == "backquotes"      ? "write $( … ) instead, where the value stands as a bare word"
          : w == "a comment"       ? "take it out of the comment"
          : w.compare(0, 15, "a variable name") == 0
              ? "a value may not name a variable; pass it through the stage's env: and check \"$N\" is a plain name "
                "first"
          : w == "after a backslash" || w == "after a $"
              ? "take the character before it away"
              : "write it bare, outside the quotes (ferry quotes the value as one word)";
      std::string stands = w.compare(0, 6, "after ") == 0 ? "stands " + w : "stands inside " + w;
      d_.error(place_of(t, k, expr), field + ": " + expr + " " + stands +
                                         ", where a value could run commands (ferry's quoting holds only for a "
                                         "bare word): " +
                                         fix);
    }
  }

 private:
  // Where `expr`, on line `k` of a text, is in the file: a text spanning lines is a
  // block scalar, whose content starts on the line after its indicator.
  Location place_of(const Text& t, int k, const std::string& expr) const {
    Location at = t.at;
    if (t.value.find('\n') != std::string::npos) at.line += 1 + k;
    size_t pos = 0;
    for (int l = 1; l < at.line && pos != std::string::npos; ++l) {
      pos = wf_.source.find('\n', pos);
      if (pos != std::string::npos) ++pos;
    }
    if (pos == std::string::npos || at.line <= 0) return t.at;
    size_t eol = wf_.source.find('\n', pos);
    std::string line = wf_.source.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    size_t col = line.find(expr);
    if (col != std::string::npos) at.column = static_cast<int>(col) + 1;
    return at;
  }

  void check_reference(const Reference& r, Location at, const Stage* stage, const std::string& field) {
    std::string expr = "'${{ " + r.text + " }}'";
    switch (r.kind) {
      case Reference::Kind::kParam: {
        if (!wf_.find_param(r.name)) {
          std::vector<std::string> names;
          for (const auto& p : wf_.params) names.push_back(p.name);
          d_.error(at, field + ": " + expr + " references unknown param '" + r.name + "'" + hint(r.name, names));
        }
        return;
      }
      case Reference::Kind::kRun: return;
      case Reference::Kind::kHost: {
        if (!stage) {
          d_.error(at, field + ": " + expr + " — host settings may reference params and run.id only");
          return;
        }
        if (!wf_.find_host(r.name)) {
          d_.error(at,
                   field + ": " + expr + " references unknown host '" + r.name + "'" + hint(r.name, host_names(wf_)));
        }
        return;
      }
      case Reference::Kind::kStageOutput: {
        if (!stage) {
          d_.error(at, field + ": " + expr + " — host settings may reference params and run.id only");
          return;
        }
        const Stage* src = wf_.find_stage(r.name);
        if (!src) {
          d_.error(at,
                   field + ": " + expr + " references unknown stage '" + r.name + "'" + hint(r.name, stage_names(wf_)));
          return;
        }
        if (src->name == stage->name || !ancestors(wf_, stage->name).count(src->name)) {
          d_.error(at, field + ": " + expr + " uses an output of stage '" + r.name + "', which stage '" + stage->name +
                           "' does not need (add it to needs)");
          return;
        }
        auto outs = stage_output_names(*src);
        if (std::find(outs.begin(), outs.end(), r.field) == outs.end()) {
          d_.error(at, field + ": " + expr + " references output '" + r.field + "' that stage '" + r.name +
                           "' does not declare" + hint(r.field, outs));
        }
        return;
      }
    }
  }

  const Workflow& wf_;
  Diagnostics& d_;
};

// How a stage's errors begin.
std::string stage_label(const Stage& s) { return "stage '" + s.name + "'"; }

// A command stage without 'host' runs on the only host; with one, it must exist.
void place_command_on_its_host(const Workflow& wf, Stage& s, Diagnostics& d) {
  if (s.kind != StageKind::kCommand) return;
  if (!s.host.empty()) {
    if (!wf.find_host(s.host)) {
      d.error(s.host_at, stage_label(s) + " runs on unknown host '" + s.host + "'" + hint(s.host, host_names(wf)));
    }
    return;
  }
  if (wf.hosts.size() == 1) {
    s.host = wf.hosts[0].name;
  } else {
    d.error(s.at, stage_label(s) + " has no 'host' and the workflow has " + std::to_string(wf.hosts.size()) + " hosts");
  }
}

// 'slurm' options and Slurm ends in retry_on mean nothing on a host without Slurm.
void check_slurm_settings_need_a_slurm_host(const Workflow& wf, const Stage& s, Diagnostics& d) {
  const Host* on = wf.find_host(s.host);
  if (!on || on->scheduler == Scheduler::kSlurm) return;
  if (s.slurm.given) {
    d.error(s.slurm.at,
            stage_label(s) + " has 'slurm' options but its host '" + s.host + "' has no 'scheduler: slurm'");
  }
  if (!s.retry_on_causes.empty()) {
    d.error(s.at, stage_label(s) + ": retry_on names " + s.retry_on_causes[0] + ", a Slurm end, but its host '" +
                      s.host + "' has no 'scheduler: slurm'");
  }
}

// An eval without 'host' runs in the coordinator; with one, on that host.
void check_eval_host_exists(const Workflow& wf, const Stage& s, Diagnostics& d) {
  if (s.kind == StageKind::kEval && !s.host.empty() && !wf.find_host(s.host)) {
    d.error(s.host_at, stage_label(s) + " evaluates on unknown host '" + s.host + "'" + hint(s.host, host_names(wf)));
  }
}

void check_copy_hosts_exist(const Workflow& wf, const Stage& s, Diagnostics& d) {
  for (const Endpoint* e : {&s.from, &s.to}) {
    if (!e->host.empty() && !wf.find_host(e->host)) {
      d.error(e->path.at, stage_label(s) + " copies " + std::string(e == &s.from ? "from" : "to") + " unknown host '" +
                              e->host + "'" + hint(e->host, host_names(wf)));
    }
  }
}

// A folder copy's root may be pruned of an earlier copy's files: it stays where
// it was named (a '..' from a template is refused when the copy starts).
void check_copy_roots_have_no_dotdot(const Stage& s, Diagnostics& d) {
  for (const Text* t : {&s.to.path, &s.keep_local}) {
    if (has_dotdot_component(t->value)) {
      d.error(t->at, stage_label(s) + ": '" + t->value + "' has a '..' component; name the folder without it");
    }
  }
}

// Direct: the source's own ssh client reaches the destination, so both are ssh
// hosts, and the bytes never pass through the coordinator.
void check_direct_route_is_ssh_to_ssh(const Workflow& wf, const Stage& s, Diagnostics& d) {
  if (s.route != CopyRoute::kDirect) return;
  if (!s.keep_local.empty()) {
    d.error(s.route_at, stage_label(s) +
                            ": route: direct sends the bytes host to host, so the coordinator cannot "
                            "keep_local a copy; use route: relay (or auto, which relays with keep_local)");
  }
  for (const Endpoint* e : {&s.from, &s.to}) {
    const Host* h = wf.find_host(e->host);
    if (h && h->transport() != Transport::kSsh) {
      d.error(s.route_at, stage_label(s) + ": route: direct needs both hosts on transport: ssh; '" + h->name +
                              "' uses transport: " + transport_name(h->transport()) + " (use route: relay or auto)");
    }
  }
}

void check_copy(const Workflow& wf, const Stage& s, Diagnostics& d) {
  if (s.kind != StageKind::kCopy) return;
  check_copy_hosts_exist(wf, s, d);
  check_copy_roots_have_no_dotdot(s, d);
  if (!s.from.host.empty() && s.from.host == s.to.host) {
    d.error(s.to.path.at, stage_label(s) + " copies from host '" + s.from.host + "' to itself; use a command stage");
  }
  check_direct_route_is_ssh_to_ssh(wf, s, d);
}

// A watching eval follows another stage and copies its checkpoints from the
// trainer's host to its own.
void check_watch(const Workflow& wf, const Stage& s, Diagnostics& d) {
  if (s.watch.stage.empty()) return;
  const std::string what = stage_label(s);
  if (s.watch.stage == s.name) {
    d.error(s.watch.stage_at, what + " watches itself");
  } else if (!wf.find_stage(s.watch.stage)) {
    d.error(s.watch.stage_at,
            what + " watches unknown stage '" + s.watch.stage + "'" + hint(s.watch.stage, stage_names(wf)));
  }
  if (s.host.empty()) {
    d.error(s.watch.stage_at, what + ": a watching eval copies each checkpoint to its 'host'; name one");
  }
  if (!s.watch.from.host.empty() && !wf.find_host(s.watch.from.host)) {
    d.error(s.watch.from.path.at,
            what + " watches unknown host '" + s.watch.from.host + "'" + hint(s.watch.from.host, host_names(wf)));
  } else if (!s.watch.from.host.empty() && s.watch.from.host == s.host) {
    d.error(s.watch.from.path.at, what + " watches its own host '" + s.host +
                                      "'; checkpoints are copied from the trainer's host to the eval's");
  }
}

void check_needs_exist(const Workflow& wf, const Stage& s, Diagnostics& d) {
  for (size_t i = 0; i < s.needs.size(); ++i) {
    const std::string& n = s.needs[i];
    if (n == s.name) {
      d.error(s.needs_at[i], stage_label(s) + " needs itself");
    } else if (!wf.find_stage(n)) {
      d.error(s.needs_at[i], stage_label(s) + " needs unknown stage '" + n + "'" + hint(n, stage_names(wf)));
    }
  }
}

void check_timeout_is_positive(const Workflow&, const Stage& s, Diagnostics& d) {
  if (s.timeout_s < 0) d.error(s.at, stage_label(s) + ": timeout must be positive");
}

// The rules each stage is held to once its host is known, in the order their errors are listed.
using StageRule = void (*)(const Workflow& wf, const Stage& s, Diagnostics& d);
const StageRule kStageRules[] = {
    check_slurm_settings_need_a_slurm_host,
    check_eval_host_exists,
    check_copy,
    check_watch,
    check_needs_exist,
    check_timeout_is_positive,
};

void check_no_cycle(const Workflow& wf, Diagnostics& d) {
  auto cycle = find_cycle(wf);
  if (cycle.empty()) return;
  std::string path;
  for (const auto& c : cycle) path += (path.empty() ? "" : " → ") + c;
  d.error(wf.find_stage(cycle[0])->at, "stages form a cycle: " + path);
}

// Every template in a stage's fields names something it may use; `run`'s stand
// where ferry's quoting holds.
void check_stage_templates(Checker& check, const Stage& s) {
  const std::string what = stage_label(s);
  check.check_text(s.run, &s, what + " run");
  check.check_run_quoting(s.run, what + " run");
  check.check_text(s.cwd, &s, what + " cwd");
  for (const auto& [k, v] : s.env) check.check_text(v, &s, what + " env " + k);
  for (const auto& o : s.outputs) {
    if (o.value) check.check_text(*o.value, &s, what + " output " + o.name);
  }
  for (const Text* t : {&s.from.path, &s.to.path, &s.keep_local, &s.target, &s.drafter, &s.reference, &s.prompts,
                        &s.watch.from.path, &s.tokenizer}) {
    check.check_text(*t, &s, what);
  }
  for (const auto& [name, t] : s.prompt_sets) check.check_text(t, &s, what + " prompts " + name);
}

}  // namespace

void validate_workflow(Workflow& wf, Diagnostics* diagnostics) {
  Diagnostics& d = *diagnostics;
  // A workflow without hosts runs everything on one implicit local host.
  if (wf.hosts.empty()) {
    Host local;
    local.name = "local";
    wf.hosts.push_back(local);
  }
  // A sharded eval becomes its shard stages and their merge, checked below like any stage.
  expand_eval_shards(wf, diagnostics);
  Checker check(wf, diagnostics);
  for (const auto& h : wf.hosts) {
    check.check_text(h.workdir, nullptr, "host '" + h.name + "' workdir");
    for (const auto& [k, v] : h.env) check.check_text(v, nullptr, "host '" + h.name + "' env " + k);
  }
  for (auto& s : wf.stages) {
    place_command_on_its_host(wf, s, d);
    for (StageRule rule : kStageRules) rule(wf, s, d);
  }
  check_no_cycle(wf, d);
  for (const auto& s : wf.stages) check_stage_templates(check, s);
}

}  // namespace ferry::workflow
