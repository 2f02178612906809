#include "workflows/eval_shards.h"

#include <algorithm>
#include <set>
#include <vector>

namespace ferry::workflow {

std::string eval_shard_name(const std::string& stage, int index, int count) {
  return stage + "-shard-" + std::to_string(index + 1) + "-of-" + std::to_string(count);
}

namespace {

// Whether `s` can be split as written; says why not.
bool can_shard(const Workflow& wf, const Stage& s, Diagnostics* d) {
  const std::string what = "stage '" + s.name + "'";
  bool ok = true;
  if (s.kind != StageKind::kEval) {
    d->error(s.hosts_at, what + ": 'hosts' splits an eval's prompts; a " + std::string(stage_kind_name(s.kind)) +
                             " stage runs on one 'host'");
    ok = false;
  }
  if (!s.host.empty()) {
    d->error(s.host_at, what + " has both 'host' and 'hosts'; name one host, or list the shards' hosts");
    ok = false;
  }
  if (!s.watch.stage.empty()) {
    d->error(s.hosts_at, what + ": a watching eval runs on one 'host'; 'hosts' does not apply");
    ok = false;
  }
  if (s.hosts.size() < 2) {
    d->error(s.hosts_at, what + (s.hosts.empty() ? ": 'hosts' must be a list of host names (the shards' hosts), not "
                                                   "an empty list"
                                                 : ": 'hosts' lists one host; an eval on one host is 'host: " +
                                                       s.hosts[0] + "'"));
    ok = false;
  } else if (s.hosts.size() > kMaxEvalShards) {
    d->error(s.hosts_at, what + ": 'hosts' lists " + std::to_string(s.hosts.size()) + " shards; at most " +
                             std::to_string(kMaxEvalShards));
    ok = false;
  }
  std::vector<std::string> names;
  for (const auto& h : wf.hosts) names.push_back(h.name);
  for (const auto& h : s.hosts) {
    if (!wf.find_host(h)) {
      std::string near = did_you_mean(h, names);
      d->error(s.hosts_at, what + " lists unknown host '" + h + "' in 'hosts'" +
                               (near.empty() ? "" : " (did you mean '" + near + "'?)"));
      ok = false;
    }
  }
  return ok;
}

}  // namespace

void expand_eval_shards(Workflow& wf, Diagnostics* diagnostics) {
  std::set<std::string> taken;
  for (const auto& s : wf.stages) taken.insert(s.name);
  std::vector<Stage> out;
  out.reserve(wf.stages.size());
  for (auto& s : wf.stages) {
    const bool written = s.hosts_at.line > 0;  // `hosts:` is in the file (an empty list too)
    if (!written || !can_shard(wf, s, diagnostics)) {
      out.push_back(std::move(s));
      continue;
    }
    const int count = static_cast<int>(s.hosts.size());
    Stage merge = s;
    merge.hosts.clear();
    merge.needs.clear();
    merge.needs_at.clear();
    merge.retries = 0;  // it only reads the shards' reports; their retries are their own
    merge.timeout_s = 0;
    for (int i = 0; i < count; ++i) {
      Stage shard = s;
      shard.name = eval_shard_name(s.name, i, count);
      if (!taken.insert(shard.name).second) {
        diagnostics->error(s.hosts_at, "stage '" + s.name + "': its shard stage '" + shard.name +
                                           "' has the name of another stage; rename one");
      }
      shard.host = s.hosts[static_cast<size_t>(i)];
      shard.host_at = s.hosts_at;
      shard.hosts.clear();
      shard.shard_index = i;
      shard.shard_count = count;
      // Shards on one host share its cores; on a Slurm host each is a job with an allocation of its own.
      const Host* on = wf.find_host(shard.host);
      shard.shards_on_host = on && on->scheduler == Scheduler::kSlurm
                                 ? 1
                                 : static_cast<int>(std::count(s.hosts.begin(), s.hosts.end(), shard.host));
      shard.gate = EvalGate{};  // the merged report is judged, never a part
      merge.shards.push_back(shard.name);
      merge.needs.push_back(shard.name);
      merge.needs_at.push_back(s.hosts_at);
      out.push_back(std::move(shard));
    }
    out.push_back(std::move(merge));
  }
  wf.stages = std::move(out);
}

}  // namespace ferry::workflow
