// `ferry hosts check`: connects to every host of a workflow the way a run would
// and reports what it finds: reachable, host key and auth (the transport's own
// error), agent version, cores, memory, free disk in the workdir, GPUs, whether
// it can run evals (eval_capability.h; with the size of the models its eval
// stages name, when they are there already), and the host-to-host reachability
// matrix probed by each host's agent. Blocks the
// calling thread (it runs its own io loop).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "orchestrator/hosts/transport_factory.h"
#include "workflows/model.h"

namespace ferry {

/// {hosts: [{name, transport, address, connected, error, agent, info, eval, eval_models}],
///  reach: [{from, to, reachable, error}]}
/// `transports`: how each host's link is carried; empty = make_transport_factory, as a
/// run does (tests: agents in the test's process).
nlohmann::json check_hosts(const workflow::Workflow& wf, const std::string& ferry_home,
                           const TransportFactoryMaker& transports = {});
std::string render_hosts_check(const nlohmann::json& report);

/// A Slurm host's row from its agent's `slurm.info` reply, read typed (odd fields read as
/// missing, never a throw): {ok, partitions: [{name, default, available, time_limit, nodes,
/// gres}], unknown_partitions: [{stage, partition}]} for the `wanted` {stage, partition} it lacks.
nlohmann::json slurm_check_row(const nlohmann::json& reply,
                               const std::vector<std::pair<std::string, std::string>>& wanted);

}  // namespace ferry
