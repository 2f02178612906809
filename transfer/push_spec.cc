#include "transfer/push_spec.h"

#include "transfer/chunk_files.h"

namespace ferry {

nlohmann::json PushSpec::to_json() const {
  return {{"from", from},
          {"workdir", workdir},
          {"to", to},
          {"from_host", from_host},
          {"to_host", to_host},
          {"address", address},
          {"port", port},
          {"user", user},
          {"dest_agent", dest_agent},
          {"dest_workdir", dest_workdir},
          {"streams", streams},
          {"owner", owner},
          {"chunk_size", chunk_size},
          {"give_up_s", give_up_s},
          {"ssh", ssh}};
}

Result<PushSpec> PushSpec::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return invalid_argument("push spec is not a JSON object");
  PushSpec s;
  try {
    s.from = j.at("from").get<std::string>();
    s.workdir = j.value("workdir", std::string());
    s.to = j.at("to").get<std::string>();
    s.from_host = j.value("from_host", std::string("source"));
    s.to_host = j.value("to_host", std::string("destination"));
    s.address = j.at("address").get<std::string>();
    s.port = j.value("port", 22);
    s.user = j.value("user", std::string());
    s.dest_agent = j.at("dest_agent").get<std::string>();
    s.dest_workdir = j.at("dest_workdir").get<std::string>();
    s.streams = j.value("streams", 4);
    s.owner = j.value("owner", std::string());
    s.chunk_size = j.value("chunk_size", int64_t{2 << 20});
    s.give_up_s = j.value("give_up_s", 600.0);
    s.ssh = j.value("ssh", std::string("ssh"));
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(std::string("push spec: ") + e.what());
  }
  if (s.from.empty() || s.to.empty() || s.address.empty() || s.dest_agent.empty() || s.dest_workdir.empty()) {
    return invalid_argument("push spec: from, to, address, dest_agent and dest_workdir must not be empty");
  }
  if (s.port < 1 || s.port > 65535) return invalid_argument("push spec: port out of range");
  if (s.streams < 1 || s.streams > 64) return invalid_argument("push spec: streams must be 1-64");
  if (s.chunk_size <= 0 || s.chunk_size > kMaxChunkBytes) return invalid_argument("push spec: bad chunk_size");
  return s;
}

}  // namespace ferry
