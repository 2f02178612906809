#include "orchestrator/hosts/transport_factory.h"

#include <variant>

#include "orchestrator/hosts/local_transport.h"
#include "orchestrator/hosts/ssh/ssh_transport.h"

namespace ferry {

namespace {

// The transport of each kind of link: a link without a case here does not compile.
struct TransportOfLink {
  const std::string& name;
  const std::string& workdir;
  std::string agent;

  HostConnection::TransportFactory operator()(const workflow::LocalLink&) const {
    return [agent = agent, workdir = workdir] { return std::make_unique<LocalTransport>(agent, workdir); };
  }
  HostConnection::TransportFactory operator()(const workflow::SshLink& ssh) const {
    return [target = ssh_target_of(name, ssh, workdir), agent = agent] {
      return std::make_unique<SshTransport>(target, agent);
    };
  }
};

}  // namespace

SshTarget ssh_target_of(const std::string& name, const workflow::SshLink& ssh, const std::string& workdir) {
  SshTarget target;
  target.name = name;
  target.address = ssh.address;
  target.port = ssh.port;
  target.user = ssh.user;
  target.identity = ssh.identity;
  target.known_hosts = ssh.known_hosts;
  target.trust_first_use = ssh.trust_first_use;
  target.ssh_config = ssh.ssh_config;
  target.ciphers = ssh.ciphers;
  target.workdir = workdir;
  return target;
}

HostConnection::TransportFactory make_transport_factory(const workflow::Host& host, const std::string& workdir) {
  return std::visit(TransportOfLink{host.name, workdir, agent_binary_path()}, host.link);
}

}  // namespace ferry
