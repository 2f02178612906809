#include "jobs/stage_spec.h"

#include <cmath>

namespace ferry {

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// Earlier versions stored one object with every kind's fields, a copy holding the
// eval fields at their defaults and an eval the copy's; the hash of resumed runs
// depends on it, so the stored form keeps that shape.
void put_copy_fields(nlohmann::json& in, const CopyStageSpec& c) {
  in["from"] = c.from;
  in["to"] = c.to;
  in["keep_local"] = c.keep_local;
  in["from_host"] = c.from_host;
  in["to_host"] = c.to_host;
  in["route"] = workflow::copy_route_name(c.route);
  in["streams"] = c.streams;
}

// The transports as the workflow names them (`transport: ssh`), the words stored since schema 1.
void put_route_facts(nlohmann::json& in, const CopyStageSpec& c) {
  in["from_transport"] = workflow::transport_name(c.from_transport);
  in["to_transport"] = workflow::transport_name(c.to_transport);
  in["to_address"] = c.to_address;
  in["to_port"] = c.to_port;
  in["to_user"] = c.to_user;
  in["to_give_up_s"] = c.to_give_up_s;
}

void put_eval_fields(nlohmann::json& in, const EvalStageSpec& e) {
  in["target"] = e.target;
  in["drafter"] = e.drafter;
  in["reference"] = e.reference;
  in["prompts"] = e.prompts;
  if (!e.datasets.empty()) {  // only then, so a one-file eval's hash is what earlier versions wrote
    for (const auto& d : e.datasets) in["datasets"].push_back({{"name", d.name}, {"prompts", d.prompts}});
  }
  in["tokenizer"] = e.tokenizer;
  in["max_new_tokens"] = e.max_new_tokens;
  in["block_size"] = e.block_size;
  in["device"] = e.device;
  in["dtype"] = e.dtype;
  in["prompt_format"] = e.prompt_format;
  in["threads"] = e.threads;
  if (e.temperature > 0) {  // only when sampled, so a greedy eval's hash is what earlier versions wrote
    in["temperature"] = e.temperature;
    in["seed"] = e.seed;
  }
  if (e.min_tau) in["min_tau"] = *e.min_tau;
  if (e.min_ratio_to_reference) in["min_ratio_to_reference"] = *e.min_ratio_to_reference;
  // Only when sharded, so an unsharded eval's hash is what earlier versions wrote.
  if (e.shard_count > 1) {
    in["shard"] = {{"index", e.shard_index}, {"count", e.shard_count}, {"on_host", e.shards_on_host}};
  }
  if (!e.shards.empty()) in["shards"] = e.shards;
}

}  // namespace

workflow::StageKind StageSpec::kind() const {
  return std::visit(Overloaded{[](const CommandStageSpec&) { return workflow::StageKind::kCommand; },
                               [](const CopyStageSpec&) { return workflow::StageKind::kCopy; },
                               [](const EvalStageSpec&) { return workflow::StageKind::kEval; }},
                    spec);
}

nlohmann::json slurm_submit_json(const workflow::SlurmOptions& o, double timeout_s) {
  nlohmann::json j = nlohmann::json::object();
  if (!o.partition.empty()) j["partition"] = o.partition;
  if (!o.account.empty()) j["account"] = o.account;
  if (!o.qos.empty()) j["qos"] = o.qos;
  if (!o.mem.empty()) j["mem"] = o.mem;
  if (!o.gres.empty()) j["gres"] = o.gres;
  if (o.cpus > 0) j["cpus"] = o.cpus;
  double time_s = o.time_s > 0 ? o.time_s : timeout_s;
  if (time_s > 0) j["time_min"] = static_cast<int64_t>(std::ceil(time_s / 60.0));
  if (!o.extra.empty()) j["options"] = o.extra;
  return j;
}

nlohmann::json StageSpec::stored_json() const {
  nlohmann::json in = {{"kind", workflow::stage_kind_name(kind())}, {"host", host}};
  std::visit(Overloaded{[&](const CommandStageSpec& c) {
                          in["command"] = c.command;
                          if (!c.shell.empty()) in["shell"] = c.shell;  // absent before: old runs keep their hash
                          in["cwd"] = c.cwd;
                          in["timeout_s"] = c.timeout_s;
                          in["env"] = c.env;
                          if (!c.slurm.is_null()) in["slurm"] = c.slurm;  // absent before: old runs keep their hash
                        },
                        [&](const CopyStageSpec& c) {
                          put_copy_fields(in, c);
                          put_route_facts(in, c);
                          put_eval_fields(in, EvalStageSpec());
                        },
                        [&](const EvalStageSpec& e) {
                          if (!host.empty()) {
                            in["env"] = e.env;
                            in["timeout_s"] = e.timeout_s;
                            if (!e.slurm.is_null()) in["slurm"] = e.slurm;  // absent before: old runs keep their hash
                          }
                          put_copy_fields(in, CopyStageSpec());
                          put_eval_fields(in, e);
                          if (e.watch) {  // absent before watching existed, so older hashes hold
                            nlohmann::json w = {{"stage", e.watch->stage},       {"from_host", e.watch->copy.from_host},
                                                {"from", e.watch->copy.from},    {"to_host", e.watch->copy.to_host},
                                                {"pattern", e.watch->pattern}, {"marker", e.watch->marker}};
                            put_route_facts(w, e.watch->copy);
                            in["watch"] = w;
                          }
                        }},
             spec);
  in["upstream"] = upstream;
  return in;
}

nlohmann::json eval_engine_json(const EvalStageSpec& e) { return eval::eval_spec_json(e); }

}  // namespace ferry
