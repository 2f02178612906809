// PushSpec: what a direct copy's sender (`ferry-agent push`, agents/push.h) is
// told by the coordinator: the source, the destination's address and agent, and
// the stream settings. It crosses the wire as JSON, so both ends share it here.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace ferry {

struct PushSpec {
  std::string from;                      // source path, relative to `workdir` unless absolute
  std::string workdir;                   // the source host's workdir
  std::string to;                        // destination path, as the destination's agent resolves it
  std::string from_host, to_host;        // the workflow's names, for messages
  std::string address;                   // how the source reaches the destination
  int port = 22;                         // 22: the ssh config's Port, if any, wins
  std::string user;                      // "" = the ssh config's User or the account's name
  std::string dest_agent, dest_workdir;  // the destination agent's binary and workdir
  int streams = 4;
  int64_t chunk_size = 2 << 20;
  double give_up_s = 600;   // without a working link to the destination
  std::string ssh = "ssh";  // the client program
  std::string owner;        // the copy's lease on its destination files (copy_owner)

  nlohmann::json to_json() const;
  static Result<PushSpec> from_json(const nlohmann::json& j);
};

}  // namespace ferry
