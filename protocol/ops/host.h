// net.probe, the agent protocol's question whether a host reaches another's
// address: its request and reply, one field list each in host.cc, read exactly as
// job.h's are. (hello stays loose JSON: it carries the protocol version, and must
// be read from an agent of any version to say which.) Plain values; any thread.
//
//   net.probe NetProbeArgs → NetProbeReply
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ferry::protocol {

/// A TCP connect from the agent's host to `address`:`port`, within `timeout_ms`.
struct NetProbeArgs {
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

}  // namespace ferry::protocol
