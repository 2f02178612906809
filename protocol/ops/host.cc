#include "protocol/ops/host.h"

#include "protocol/ops/message_fields.h"

namespace ferry::protocol {
namespace {

// Both directions of each message (base/json_field_writer.h, base/json_fields.h).
constexpr auto net_probe_fields = [](auto& v, auto& x) {
  v("address", x.address, kRequired);
  v("port", x.port, kRequired);
  v("timeout_ms", x.timeout_ms);
};

constexpr auto net_probe_reply_fields = [](auto& v, auto& x) {
  v("reachable", x.reachable);
  v("ms", x.ms);
  v.nonempty("error", x.error);
};

}  // namespace

nlohmann::json NetProbeArgs::to_json() const { return fields_json(*this, net_probe_fields); }
Result<NetProbeArgs> NetProbeArgs::from_json(const nlohmann::json& j) {
  return request_from_json<NetProbeArgs>(j, "net.probe", net_probe_fields);
}

nlohmann::json NetProbeReply::to_json() const { return fields_json(*this, net_probe_reply_fields); }
Result<NetProbeReply> NetProbeReply::from_json(const nlohmann::json& j) {
  return reply_from_json<NetProbeReply>(j, "the net.probe reply", net_probe_reply_fields);
}

}  // namespace ferry::protocol
