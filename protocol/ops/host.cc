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

constexpr auto gpu_fields = [](auto& v, auto& x) {
  v("name", x.name);
  v("memory", x.memory);
};

constexpr auto host_info_reply_fields = [](auto& v, auto& x) {
  v("hostname", x.hostname);
  v("cores", x.cores);
  v("mem_total_bytes", x.mem_total_bytes);
  v("mem_available_bytes", x.mem_available_bytes);
  v("disk_free_bytes", x.disk_free_bytes);
  v("workdir", x.workdir);
  v.objects("gpus", x.gpus, gpu_fields);
  v("ssh_connection", x.ssh_connection);
};

constexpr auto slurm_partition_fields = [](auto& v, auto& x) {
  v("name", x.name, kRequired);
  v("default", x.is_default);
  v("available", x.available);
  v("time_limit", x.time_limit);
  v("nodes", x.nodes);
  v("gres", x.gres);
};

constexpr auto slurm_info_reply_fields = [](auto& v, auto& x) {
  v.objects("partitions", x.partitions, slurm_partition_fields);
};

}  // namespace

FERRY_REQUEST_JSON(NetProbeArgs, net_probe_fields)
FERRY_REPLY_JSON(NetProbeReply, "the net.probe reply", net_probe_reply_fields)
FERRY_OPEN_REPLY_JSON(HostInfoReply, "the host.info reply", host_info_reply_fields)
FERRY_OPEN_REPLY_JSON(SlurmInfoReply, "the slurm.info reply", slurm_info_reply_fields)

}  // namespace ferry::protocol
