#include "orchestrator/stage_resolve.h"

#include "base/file_hash.h"
#include "base/file_util.h"
#include "orchestrator/scheduler.h"
#include "orchestrator/stage_slot.h"
#include "orchestrator/workflow_paths.h"
#include "workflows/dag.h"
#include "workflows/slurm_options.h"
#include "workflows/template.h"

namespace ferry {

using workflow::Stage;
using workflow::StageKind;

std::string Scheduler::host_workdir(const workflow::Host& host) {
  auto expanded = resolve(host.workdir, nullptr, false);
  return resolve_host_workdir(host, expanded.ok() ? *expanded : host.workdir.value, run_.workflow_path,
                              options_.ferry_home);
}

Result<std::string> Scheduler::resolve(const workflow::Text& text, const Stage* stage, bool shell_quote) {
  return workflow::expand_template(
      text.value,
      [&](const workflow::Reference& r) -> Result<std::string> {
        using K = workflow::Reference::Kind;
        switch (r.kind) {
          case K::kParam: {
            if (run_.params.contains(r.name) && run_.params[r.name].is_string())
              return run_.params[r.name].get<std::string>();
            const auto* p = wf_.find_param(r.name);
            if (p) return p->default_value;
            return not_found("unknown param '" + r.name + "'");
          }
          case K::kRun: return run_.id;
          case K::kHost: {
            const auto* h = wf_.find_host(r.name);
            if (!h) return not_found("unknown host '" + r.name + "'");
            return r.field == "workdir" ? host_workdir(*h) : h->address;
          }
          case K::kStageOutput: {
            auto it = stages_.find(r.name);
            if (it == stages_.end()) return not_found("unknown stage '" + r.name + "'");
            auto o = it->second->outputs.find(r.field);
            if (o == it->second->outputs.end()) {
              return not_found("stage '" + r.name + "' produced no output '" + r.field + "'");
            }
            return o->second;
          }
        }
        return not_found("bad reference");
      },
      shell_quote);
}

Result<StageSpec> Scheduler::resolve_stage(StageSlot& st) {
  const Stage& s = *st.spec;
  StageSpec out;
  out.name = s.name;
  out.host = s.host;
  out.log_max = s.log_max_bytes;
  std::string where = wf_.path + ":" + std::to_string(s.at.line) + ":" + std::to_string(s.at.column) + ": stage '" +
                      s.name + "': ";
  auto get = [&](const workflow::Text& t, bool quote, std::string* into) -> Status {
    auto r = resolve(t, &s, quote);
    if (!r.ok()) return r.status().with_context(where.substr(0, where.size() - 2));
    *into = std::move(r).value();
    return Status();
  };
  // A job on a host (a command, an eval's worker) gets the host's env and the stage's.
  auto job_env = [&](std::map<std::string, std::string>* env) -> Status {
    const workflow::Host* host = wf_.find_host(s.host);
    for (const auto& [k, v] : host->env) FERRY_RETURN_IF_ERROR(get(v, false, &(*env)[k]));
    for (const auto& [k, v] : s.env) FERRY_RETURN_IF_ERROR(get(v, false, &(*env)[k]));
    (*env)["FERRY_RUN_ID"] = run_.id;
    (*env)["FERRY_STAGE"] = s.name;
    (*env)["FERRY_WORKDIR"] = host_workdir(*host);
    return Status();
  };
  // What the route choice of a copy needs: a direct copy is ssh from the source to
  // the destination's address, as the workflow names it.
  auto route_facts = [&](CopyStageSpec* c) {
    const workflow::Host* from = wf_.find_host(c->from_host);
    const workflow::Host* to = wf_.find_host(c->to_host);
    c->from_ssh = from && from->transport == workflow::Transport::kSsh;
    c->to_ssh = to && to->transport == workflow::Transport::kSsh;
    if (to) {
      c->to_address = to->address;
      c->to_port = to->port;
      c->to_user = to->user;
      c->to_give_up_s = to->give_up_s;
    }
  };
  // On a Slurm host: the sbatch options (kNotFound elsewhere).
  auto slurm_json = [&]() -> Result<nlohmann::json> {
    const workflow::Host* host = wf_.find_host(s.host);
    if (!host || host->scheduler != workflow::Scheduler::kSlurm) return not_found("not a Slurm host");
    return slurm_submit_json(workflow::merge_slurm(host->slurm, s.slurm), s.timeout_s);
  };
  switch (s.kind) {
    case StageKind::kCommand: {
      CommandStageSpec c;
      FERRY_RETURN_IF_ERROR(get(s.run, true, &c.command));
      c.shell = wf_.shell_of(s);
      FERRY_RETURN_IF_ERROR(get(s.cwd, false, &c.cwd));
      c.timeout_s = s.timeout_s;
      FERRY_RETURN_IF_ERROR(job_env(&c.env));
      if (Result<nlohmann::json> sl = slurm_json(); sl.ok()) c.slurm = *sl;
      for (const auto& o : s.outputs) {
        if (!o.value) c.required_outputs.push_back(o.name);
      }
      out.spec = std::move(c);
      break;
    }
    case StageKind::kCopy: {
      CopyStageSpec c;
      FERRY_RETURN_IF_ERROR(get(s.from.path, false, &c.from));
      FERRY_RETURN_IF_ERROR(get(s.to.path, false, &c.to));
      FERRY_RETURN_IF_ERROR(get(s.keep_local, false, &c.keep_local));
      // Confined like a listing's names: a stage output may have built these roots.
      for (auto [key, value] : {std::pair{"to", &c.to}, {"keep_local", &c.keep_local}}) {
        if (has_dotdot_component(*value)) {
          return invalid_argument("stage '" + s.name + "': " + key + " '" + *value +
                                  "' has a '..' component; a copy stays where it was named");
        }
      }
      c.from_host = s.from.host;
      c.to_host = s.to.host;
      c.route = s.route;
      c.streams = s.streams;
      route_facts(&c);
      out.spec = std::move(c);
      break;
    }
    case StageKind::kEval: {
      EvalStageSpec e;
      for (auto [text, into] : {std::pair{&s.target, &e.target}, {&s.drafter, &e.drafter},
                                {&s.reference, &e.reference}, {&s.prompts, &e.prompts},
                                {&s.tokenizer, &e.tokenizer}}) {
        FERRY_RETURN_IF_ERROR(get(*text, false, into));
      }
      for (const auto& [name, text] : s.prompt_sets) {  // named datasets, each path templated
        eval::DatasetFile d{name, ""};
        FERRY_RETURN_IF_ERROR(get(text, false, &d.prompts));
        e.datasets.push_back(std::move(d));
      }
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
      if (!s.host.empty()) {
        FERRY_RETURN_IF_ERROR(job_env(&e.env));
        e.timeout_s = s.timeout_s;
        if (Result<nlohmann::json> sl = slurm_json(); sl.ok()) e.slurm = *sl;
      }
      if (!s.watch.stage.empty()) {  // each checkpoint is copied from the trainer's host to the eval's
        WatchSpec w;
        w.stage = s.watch.stage;
        w.pattern = s.watch.pattern;
        w.marker = s.watch.marker;
        w.fail_on_error = s.watch.fail_on_error;
        FERRY_RETURN_IF_ERROR(get(s.watch.from.path, false, &w.copy.from));
        w.copy.from_host = s.watch.from.host;
        w.copy.to_host = s.host;
        route_facts(&w.copy);
        e.watch = std::move(w);
      }
      out.spec = std::move(e);
      break;
    }
  }
  // Upstream outputs are inputs too: a changed checkpoint path means a new eval.
  for (const auto& a : workflow::ancestors(wf_, s.name)) out.upstream[a] = stages_[a]->outputs;
  return out;
}

std::string stage_inputs_hash(const StageSpec& spec) {
  std::string text = spec.stored_json().dump();
  return xxh128_hex(text.data(), text.size());
}

}  // namespace ferry
