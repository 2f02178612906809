// What an agent can tell about its host: resources (host.info) and whether it
// reaches an address (net.probe). Plain functions; bounded by their timeouts.
#pragma once

#include <string>

#include "base/status.h"
#include "protocol/ops/host.h"

namespace ferry {

/// host.info's answer; the free disk is `workdir`'s.
protocol::HostInfoReply host_info(const std::string& workdir);

/// TCP connect to address:port within timeout_ms.
protocol::NetProbeReply probe_tcp(const std::string& address, int port, int timeout_ms);

}  // namespace ferry
