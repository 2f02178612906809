// What an agent can tell about its host: resources (host.info) and whether it
// reaches an address (net.probe). Plain functions; bounded by their timeouts.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "protocol/ops/host.h"

namespace ferry {

/// {hostname, cores, mem_total_bytes, mem_available_bytes, disk_free_bytes (of
/// `workdir`), gpus: [{name, memory}], ssh_connection}
nlohmann::json host_info(const std::string& workdir);

/// TCP connect to address:port within timeout_ms: {reachable, ms, error}.
protocol::NetProbeReply probe_tcp(const std::string& address, int port, int timeout_ms);

}  // namespace ferry
