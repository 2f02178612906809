// Which AgentTransport carries a host: a local subprocess or an SSH exec channel.
#pragma once

#include "orchestrator/host_connection.h"
#include "workflows/model.h"

namespace ferry {

/// A factory making a fresh transport for each (re)connection to `host`, whose
/// agent works in `workdir` (already resolved).
HostConnection::TransportFactory make_transport_factory(const workflow::Host& host, const std::string& workdir);

}  // namespace ferry
