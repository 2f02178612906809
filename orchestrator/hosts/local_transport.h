// LocalTransport: `ferry-agent serve` as a subprocess over pipes — the embedded
// default for `transport: local` hosts, speaking the same protocol SSH carries.
// One thread (the host's connection thread), as every AgentTransport.
#pragma once

#include <memory>

#include "base/child_process.h"
#include "orchestrator/hosts/agent_transport.h"

namespace ferry {

/// The environment variable a local host's jobs find ferry's own programs folder in
/// (where its agent is: /usr/lib/ferry installed, bin/ of a build).
inline constexpr const char* kLibDirVar = "FERRY_LIB_DIR";

class LocalTransport : public AgentTransport {
 public:
  LocalTransport(std::string agent_path, std::string workdir);
  ~LocalTransport() override;
  Status open() override;
  Result<size_t> read_some(char* buf, size_t n, int timeout_ms) override;
  Status write_all(const char* data, size_t n) override;
  void close() override;
  std::string describe() const override;
  /// Another agent subprocess over the same workdir.
  Result<std::unique_ptr<AgentTransport>> open_lane() override;
  int poll_fd() const override;

 private:
  std::string agent_path_;
  std::string workdir_;
  std::unique_ptr<ChildProcess> agent_;
};

/// The ferry-agent binary to run or upload: $FERRY_AGENT_BIN, else the one
/// beside the running ferry executable.
std::string agent_binary_path();

}  // namespace ferry
