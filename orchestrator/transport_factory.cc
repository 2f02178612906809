#include "orchestrator/transport_factory.h"

#include "orchestrator/local_transport.h"

namespace ferry {
namespace {

// Stands in for the SSH transport in builds without it; fails every open clearly.
class UnavailableTransport : public AgentTransport {
 public:
  explicit UnavailableTransport(std::string why) : why_(std::move(why)) {}
  Status open() override { return failed_precondition(why_); }
  Result<size_t> read_some(char*, size_t, int) override { return unavailable(why_); }
  Status write_all(const char*, size_t) override { return unavailable(why_); }
  void close() override {}
  std::string describe() const override { return "unavailable"; }

 private:
  std::string why_;
};

}  // namespace

HostConnection::TransportFactory make_transport_factory(const workflow::Host& host, const std::string& workdir) {
  if (host.transport == workflow::Transport::kLocal) {
    std::string agent = agent_binary_path();
    return [agent, workdir] { return std::make_unique<LocalTransport>(agent, workdir); };
  }
  std::string name = host.name;
  return [name] {
    return std::make_unique<UnavailableTransport>("host '" + name + "': the ssh transport is not built in");
  };
}

}  // namespace ferry
