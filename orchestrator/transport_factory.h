// Which AgentTransport carries a host: a local subprocess or an SSH exec channel.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "orchestrator/host_connection.h"
#include "orchestrator/ssh/lane_socket.h"
#include "workflows/model.h"

namespace ferry {

/// A factory making a fresh transport for each (re)connection to `host`, whose
/// agent works in `workdir` (already resolved). `lanes`: the host's LaneSocket
/// (ssh/lane_socket.h), shared by its main link (`lane` 0, which publishes it) and
/// its data lanes (which open no login shell when it is there); null for none.
HostConnection::TransportFactory make_transport_factory(const workflow::Host& host, const std::string& workdir,
                                                        std::shared_ptr<LaneSocket> lanes = nullptr, int lane = 0);

/// What makes a host's transport factory, with make_transport_factory's arguments: the
/// scheduler's way in for transports of another kind (tests: agents in the test's process).
using TransportFactoryMaker = std::function<HostConnection::TransportFactory(
    const workflow::Host& host, const std::string& workdir, std::shared_ptr<LaneSocket> lanes, int lane)>;

}  // namespace ferry
