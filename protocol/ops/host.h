// The agent protocol's questions about a host: net.probe, whether it reaches
// another's address, and host.info and slurm.info, what it has (agents/host_probe.h,
// agents/slurm_job.h; `ferry hosts check` and the remote eval read them). One field
// list per message in host.cc, read exactly as job.h's are, except that host.info's
// and slurm.info's replies skip a field they do not know: they describe a host, and
// an agent of another build may say more of it. (hello stays loose JSON: it carries
// the protocol version, and must be read from an agent of any version to say which.)
// Plain values; any thread.
//
//   net.probe  NetProbeArgs → NetProbeReply
//   host.info  {}           → HostInfoReply
//   slurm.info {}           → SlurmInfoReply
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ferry::protocol {

// The replies, named by their requests (Args::Reply) before they are defined.
struct NetProbeReply;

/// A TCP connect from the agent's host to `address`:`port`, within `timeout_ms`.
struct NetProbeArgs {
  static constexpr const char* kOp = "net.probe";
  using Reply = NetProbeReply;
  std::string address;
  int port = 0;
  int timeout_ms = 2000;

  nlohmann::json to_json() const;
  static Result<NetProbeArgs> from_json(const nlohmann::json& j);
};

struct NetProbeReply {
  bool reachable = false;
  double ms = 0;      // how long the answer took
  std::string error;  // why not, when not reachable

  nlohmann::json to_json() const;
  static Result<NetProbeReply> from_json(const nlohmann::json& j);
};

/// A GPU as nvidia-smi names it: "NVIDIA H100 80GB HBM3", "81559 MiB".
struct GpuInfo {
  std::string name;
  std::string memory;
};

/// host.info's reply: the host's resources now (free disk: of the agent's workdir).
struct HostInfoReply {
  std::string hostname;
  int64_t cores = 0;
  int64_t mem_total_bytes = 0;
  int64_t mem_available_bytes = 0;
  int64_t disk_free_bytes = 0;
  std::string workdir;
  std::vector<GpuInfo> gpus;
  std::string ssh_connection;  // $SSH_CONNECTION: "client port server port"

  nlohmann::json to_json() const;
  static Result<HostInfoReply> from_json(const nlohmann::json& j);
};

/// A Slurm partition as sinfo lists it (`default`: the cluster's default partition).
struct SlurmPartition {
  std::string name;
  bool is_default = false;
  std::string available;   // "up", "down"...
  std::string time_limit;  // "1-00:00:00", "infinite"
  int64_t nodes = 0;
  std::string gres;  // "gpu:4", "(null)"
};

/// slurm.info's reply: the partitions sinfo shows the agent's user.
struct SlurmInfoReply {
  std::vector<SlurmPartition> partitions;

  nlohmann::json to_json() const;
  static Result<SlurmInfoReply> from_json(const nlohmann::json& j);
};

}  // namespace ferry::protocol
