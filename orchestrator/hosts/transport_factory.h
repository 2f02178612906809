// Which AgentTransport carries a host: a local subprocess or an SSH exec channel.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "orchestrator/hosts/host_connection.h"
#include "orchestrator/hosts/ssh/ssh_target.h"
#include "workflows/model.h"

namespace ferry {

/// A factory making a fresh transport for each (re)connection to `host`, whose
/// agent works in `workdir` (already resolved). Its data lanes are opened by the
/// transport itself (AgentTransport::open_lane).
HostConnection::TransportFactory make_transport_factory(const workflow::Host& host, const std::string& workdir);

/// Where and how to reach ssh host `name` (its entry's SSH link), with its agent's
/// `workdir`: the one place a workflow::SshLink becomes an SshTarget.
SshTarget ssh_target_of(const std::string& name, const workflow::SshLink& ssh, const std::string& workdir);

/// What makes a host's transport factory, with make_transport_factory's arguments: the
/// scheduler's way in for transports of another kind (tests: agents in the test's process).
using TransportFactoryMaker =
    std::function<HostConnection::TransportFactory(const workflow::Host& host, const std::string& workdir)>;

}  // namespace ferry
