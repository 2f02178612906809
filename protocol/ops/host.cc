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

FERRY_REQUEST_JSON(NetProbeArgs, "net.probe", net_probe_fields)
FERRY_REPLY_JSON(NetProbeReply, "the net.probe reply", net_probe_reply_fields)

}  // namespace ferry::protocol
