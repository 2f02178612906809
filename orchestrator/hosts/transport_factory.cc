#include "orchestrator/hosts/transport_factory.h"

#include "orchestrator/hosts/local_transport.h"
#include "orchestrator/hosts/ssh/ssh_transport.h"

namespace ferry {

SshTarget ssh_target_of(const workflow::Host& host, const std::string& workdir) {
  SshTarget target;
  target.name = host.name;
  target.address = host.address;
  target.port = host.port;
  target.user = host.user;
  target.identity = host.identity;
  target.known_hosts = host.known_hosts;
  target.trust_first_use = host.trust_first_use;
  target.ssh_config = host.ssh_config;
  target.ciphers = host.ciphers;
  target.workdir = workdir;
  return target;
}

HostConnection::TransportFactory make_transport_factory(const workflow::Host& host, const std::string& workdir) {
  std::string agent = agent_binary_path();
  if (host.transport == workflow::Transport::kLocal) {
    return [agent, workdir] { return std::make_unique<LocalTransport>(agent, workdir); };
  }
  SshTarget target = ssh_target_of(host, workdir);
  return [target, agent] { return std::make_unique<SshTransport>(target, agent); };
}

}  // namespace ferry
