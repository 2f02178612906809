#include "orchestrator/stage_resolve.h"

#include <functional>
#include <map>
#include <tuple>

#include "base/file_hash.h"
#include "base/file_util.h"
#include "orchestrator/workflow_paths.h"
#include "workflows/dag.h"
#include "workflows/slurm_options.h"
#include "workflows/template.h"

namespace ferry {

using workflow::Stage;
using workflow::StageKind;

std::string resolve_host_workdir_of(const ResolveContext& ctx, const workflow::Host& host) {
  auto expanded = resolve_text(ctx, host.workdir, false);
  return resolve_host_workdir(host, expanded.ok() ? *expanded : host.workdir.value, ctx.run.workflow_path,
                              ctx.ferry_home);
}

Result<std::string> resolve_text(const ResolveContext& ctx, const workflow::Text& text, bool shell_quote) {
  const RunRecord& run = ctx.run;
  return workflow::expand_template(
      text.value,
      [&](const workflow::Reference& r) -> Result<std::string> {
        using K = workflow::Reference::Kind;
        switch (r.kind) {
          case K::kParam: {
            if (run.params.contains(r.name) && run.params[r.name].is_string())
              return run.params[r.name].get<std::string>();
            const auto* p = ctx.wf.find_param(r.name);
            if (p) return p->default_value;
            return not_found("unknown param '" + r.name + "'");
          }
          case K::kRun: return run.id;
          case K::kHost: {
            const auto* h = ctx.wf.find_host(r.name);
            if (!h) return not_found("unknown host '" + r.name + "'");
            if (r.field == "workdir") return resolve_host_workdir_of(ctx, *h);
            const auto* ssh = std::get_if<workflow::SshLink>(&h->link);
            return ssh ? ssh->address : std::string();
          }
          case K::kStageOutput: {
            const std::map<std::string, std::string>* outputs = ctx.outputs_of(r.name);
            if (outputs == nullptr) return not_found("unknown stage '" + r.name + "'");
            auto o = outputs->find(r.field);
            if (o == outputs->end()) {
              return not_found("stage '" + r.name + "' produced no output '" + r.field + "'");
            }
            return o->second;
          }
        }
        return not_found("bad reference");
      },
      shell_quote);
}

namespace {

// What the route choice of a copy needs: a direct copy is ssh from the source to
// the destination's address, as the workflow names it.
void add_route_facts(const workflow::Workflow& wf, CopyStageSpec* c) {
  const workflow::Host* from = wf.find_host(c->from_host);
  const workflow::Host* to = wf.find_host(c->to_host);
  c->from_transport = from ? from->transport() : workflow::Transport::kLocal;
  c->to_transport = to ? to->transport() : workflow::Transport::kLocal;
  if (to) c->to_give_up_s = to->give_up_s;
  if (const auto* ssh = to ? std::get_if<workflow::SshLink>(&to->link) : nullptr) {
    c->to_address = ssh->address;
    c->to_port = ssh->port;
    c->to_user = ssh->user;
  }
}

// On a Slurm host: the sbatch options (kNotFound elsewhere).
Result<nlohmann::json> slurm_json(const workflow::Workflow& wf, const Stage& s) {
  const workflow::Host* host = wf.find_host(s.host);
  if (!host || host->scheduler != workflow::Scheduler::kSlurm) return not_found("not a Slurm host");
  return slurm_submit_json(workflow::merge_slurm(host->slurm, s.slurm), s.timeout_s);
}

// The eval's settings that are taken as written, no templates in them.
void copy_eval_settings(const Stage& s, EvalStageSpec& e) {
  e.prompt_format = s.prompt_format;
  e.max_new_tokens = s.max_new_tokens;
  e.block_size = s.block_size;
  e.device = s.device;
  e.dtype = s.dtype;
  e.threads = s.threads;
  e.temperature = s.temperature;
  e.seed = s.seed;
  e.min_tau = s.gate.min_tau;
  e.min_ratio_to_reference = s.gate.min_ratio_to_reference;
  e.shard_index = s.shard_index;
  e.shard_count = s.shard_count;
  e.shards_on_host = s.shards_on_host;
  e.shards = s.shards;
}

// One stage's templates resolved into its runner's spec, one function per kind.
class StageResolver {
 public:
  StageResolver(const ResolveContext& ctx, const Stage& s)
      : ctx_(ctx),
        wf_(ctx.wf),
        s_(s),
        where_(wf_.path + ":" + std::to_string(s.at.line) + ":" + std::to_string(s.at.column) + ": stage '" + s.name +
               "'") {}

  Status resolve_kind(StageSpec& out) const {
    switch (s_.kind) {
      case StageKind::kCommand: return command(out);
      case StageKind::kCopy: return copy(out);
      case StageKind::kEval: return eval(out);
    }
    return Status();
  }

 private:
  Status text(const workflow::Text& t, bool quote, std::string* into) const {
    auto r = resolve_text(ctx_, t, quote);
    if (!r.ok()) return r.status().with_context(where_);
    *into = std::move(r).value();
    return Status();
  }

  // A job on a host (a command, an eval's worker) gets the host's env and the stage's.
  Status job_env(std::map<std::string, std::string>* env) const {
    const workflow::Host* host = wf_.find_host(s_.host);
    for (const auto& [k, v] : host->env) FERRY_RETURN_IF_ERROR(text(v, false, &(*env)[k]));
    for (const auto& [k, v] : s_.env) FERRY_RETURN_IF_ERROR(text(v, false, &(*env)[k]));
    (*env)["FERRY_RUN_ID"] = ctx_.run.id;
    (*env)["FERRY_STAGE"] = s_.name;
    (*env)["FERRY_WORKDIR"] = resolve_host_workdir_of(ctx_, *host);
    return Status();
  }

  Status command(StageSpec& out) const {
    CommandStageSpec c;
    FERRY_RETURN_IF_ERROR(text(s_.run, true, &c.command));
    c.shell = wf_.shell_of(s_);
    FERRY_RETURN_IF_ERROR(text(s_.cwd, false, &c.cwd));
    c.timeout_s = s_.timeout_s;
    FERRY_RETURN_IF_ERROR(job_env(&c.env));
    if (Result<nlohmann::json> sl = slurm_json(wf_, s_); sl.ok()) c.slurm = *sl;
    for (const auto& o : s_.outputs) {
      if (!o.value) c.required_outputs.push_back(o.name);
    }
    out.spec = std::move(c);
    return Status();
  }

  Status copy(StageSpec& out) const {
    CopyStageSpec c;
    FERRY_RETURN_IF_ERROR(text(s_.from.path, false, &c.from));
    FERRY_RETURN_IF_ERROR(text(s_.to.path, false, &c.to));
    FERRY_RETURN_IF_ERROR(text(s_.keep_local, false, &c.keep_local));
    // Confined like a listing's names: a stage output may have built these roots.
    for (auto [key, written, value] :
         {std::tuple{"to", &s_.to.path, &c.to}, {"keep_local", &s_.keep_local, &c.keep_local}}) {
      if (has_dotdot_component(*value)) {
        return invalid_argument("stage '" + s_.name + "': " + key + " '" + *value +
                                "' has a '..' component; a copy stays where it was named");
      }
      FERRY_RETURN_IF_ERROR(refuse_absolute_root_from_output(key, *written, *value));
    }
    c.from_host = s_.from.host;
    c.to_host = s_.to.host;
    c.route = s_.route;
    c.streams = s_.streams;
    add_route_facts(wf_, &c);
    out.spec = std::move(c);
    return Status();
  }

  // A host writes its outputs and is not trusted: a copy root that opens with one
  // would let it name any folder (~/.ssh), which the copy writes and prunes. After a
  // prefix the workflow wrote (params, hosts and run.id included) it stays under that.
  Status refuse_absolute_root_from_output(const char* key, const workflow::Text& t, const std::string& value) const {
    auto refs = workflow::parse_references(t.value);
    // '~' too: keep_local's ~/ is the coordinator's home (resolve_local_path).
    if (!refs.ok() || value.empty() || (value.front() != '/' && value.front() != '~')) return Status();
    for (const workflow::Reference& r : *refs) {
      if (r.kind != workflow::Reference::Kind::kStageOutput) continue;
      auto prefix = resolve_text(ctx_, workflow::Text{t.value.substr(0, r.offset), t.at}, false);
      if (!prefix.ok() || !prefix->empty()) return Status();
      return invalid_argument(
          "stage '" + s_.name + "': " + key + " '" + value + "' begins with the output '" + r.field + "' of stage '" +
          r.name +
          "', a path from / or ~ that a host wrote; a host's output may only name a folder under one "
          "the workflow names (e.g. " +
          key + ": " + (std::string(key) == "to" ? s_.to.host + ":" : "") + "ckpts/${{ stages." + r.name + ".outputs." +
          r.field + " }})");
    }
    return Status();
  }

  Status eval(StageSpec& out) const {
    EvalStageSpec e;
    FERRY_RETURN_IF_ERROR(eval_paths(e));
    copy_eval_settings(s_, e);
    if (!s_.host.empty()) {
      FERRY_RETURN_IF_ERROR(job_env(&e.env));
      e.timeout_s = s_.timeout_s;
      if (Result<nlohmann::json> sl = slurm_json(wf_, s_); sl.ok()) e.slurm = *sl;
    }
    if (!s_.watch.stage.empty()) FERRY_RETURN_IF_ERROR(watch(e));
    out.spec = std::move(e);
    return Status();
  }

  // The eval's templated paths: models, prompts, tokenizer and the named datasets.
  Status eval_paths(EvalStageSpec& e) const {
    for (auto [path, into] : {std::pair{&s_.target, &e.target},
                              {&s_.drafter, &e.drafter},
                              {&s_.reference, &e.reference},
                              {&s_.prompts, &e.prompts},
                              {&s_.tokenizer, &e.tokenizer}}) {
      FERRY_RETURN_IF_ERROR(text(*path, false, into));
    }
    for (const auto& [name, path] : s_.prompt_sets) {
      eval::DatasetFile d{name, ""};
      FERRY_RETURN_IF_ERROR(text(path, false, &d.prompts));
      e.datasets.push_back(std::move(d));
    }
    return Status();
  }

  // Each checkpoint is copied from the trainer's host to the eval's.
  Status watch(EvalStageSpec& e) const {
    WatchSpec w;
    w.stage = s_.watch.stage;
    w.pattern = s_.watch.pattern;
    w.marker = s_.watch.marker;
    w.fail_on_error = s_.watch.fail_on_error;
    FERRY_RETURN_IF_ERROR(text(s_.watch.from.path, false, &w.copy.from));
    w.copy.from_host = s_.watch.from.host;
    w.copy.to_host = s_.host;
    add_route_facts(wf_, &w.copy);
    e.watch = std::move(w);
    return Status();
  }

  const ResolveContext& ctx_;
  const workflow::Workflow& wf_;
  const Stage& s_;
  std::string where_;  // "file:line:col: stage 'NAME'", before a template's error
};

}  // namespace

Result<StageSpec> resolve_stage(const ResolveContext& ctx, const Stage& s) {
  StageSpec out;
  out.name = s.name;
  out.host = s.host;
  out.log_max = s.log_max_bytes;
  FERRY_RETURN_IF_ERROR(StageResolver(ctx, s).resolve_kind(out));
  // Upstream outputs are inputs too: a changed checkpoint path means a new eval.
  for (const auto& a : workflow::ancestors(ctx.wf, s.name)) {
    if (const auto* outputs = ctx.outputs_of(a)) out.upstream[a] = *outputs;
  }
  return out;
}

std::string stage_inputs_hash(const StageSpec& spec) {
  std::string text = spec.stored_json().dump();
  return xxh128_hex(text.data(), text.size());
}

}  // namespace ferry
