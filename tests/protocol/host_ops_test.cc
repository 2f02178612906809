// The host ops' messages (protocol/ops/host.h): the keys as before, the port
// required, an unknown field refused by name; host.info's and slurm.info's replies
// skip a field they do not know but still refuse one of the wrong type.
#include "protocol/ops/host.h"

#include <gtest/gtest.h>

namespace ferry::protocol {
namespace {

TEST(HostOpsTest, NetProbeKeepsItsKeysAndNamesWhatIsWrong) {
  const NetProbeArgs args{"10.0.0.2", 22, 1500};
  EXPECT_EQ(args.to_json(), nlohmann::json::parse(R"({"address":"10.0.0.2","port":22,"timeout_ms":1500})"));
  auto back = NetProbeArgs::from_json({{"op", "net.probe"}, {"address", "h"}, {"port", 2222}});
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->timeout_ms, 2000);
  auto missing = NetProbeArgs::from_json({{"address", "h"}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "the net.probe request's port is missing");
  auto unknown = NetProbeArgs::from_json({{"address", "h"}, {"port", 22}, {"timeout", 5}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(), "the net.probe request's timeout is not a known field");
}

TEST(HostOpsTest, AReachableProbeSaysNoError) {
  EXPECT_EQ(NetProbeReply({true, 1.5, ""}).to_json(), nlohmann::json::parse(R"({"reachable":true,"ms":1.5})"));
  auto back = NetProbeReply::from_json({{"reachable", false}, {"ms", 3}, {"error", "Connection refused"}});
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->error, "Connection refused");
  EXPECT_FALSE(NetProbeReply::from_json({{"reachable", "no"}}).ok());
}

TEST(HostOpsTest, HostInfoReadsBackAndSkipsWhatANewerAgentAdds) {
  HostInfoReply info{"gpu-1", 64, 1 << 30, 1 << 29, 5, "/w", {{"NVIDIA H100", "81559 MiB"}}, "10.0.0.1 5 10.0.0.2 22"};
  const auto wire = nlohmann::json::parse(R"({"hostname":"gpu-1","cores":64,"mem_total_bytes":1073741824,
      "mem_available_bytes":536870912,"disk_free_bytes":5,"workdir":"/w",
      "gpus":[{"name":"NVIDIA H100","memory":"81559 MiB"}],"ssh_connection":"10.0.0.1 5 10.0.0.2 22"})");
  EXPECT_EQ(info.to_json(), wire);
  nlohmann::json newer = wire;
  newer["numa_nodes"] = 2;
  newer["gpus"][0]["uuid"] = "GPU-1";
  auto back = HostInfoReply::from_json(newer);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->cores, 64);
  ASSERT_EQ(back->gpus.size(), 1u);
  EXPECT_EQ(back->gpus[0].memory, "81559 MiB");
  nlohmann::json mistyped = wire;
  mistyped["cores"] = "64";
  auto bad = HostInfoReply::from_json(mistyped);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "the host.info reply's cores is a string, not an integer");
}

TEST(HostOpsTest, SlurmInfoReadsBackAndNamesAPartitionWithoutAName) {
  SlurmInfoReply info{{{"debug", true, "up", "infinite", 2, "gpu:4"}}};
  EXPECT_EQ(info.to_json(), nlohmann::json::parse(R"({"partitions":[{"name":"debug","default":true,"available":"up",
      "time_limit":"infinite","nodes":2,"gres":"gpu:4"}]})"));
  auto back = SlurmInfoReply::from_json(info.to_json());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back->partitions[0].is_default);
  auto nameless = SlurmInfoReply::from_json(nlohmann::json::parse(R"({"partitions":[{"nodes":1}]})"));
  ASSERT_FALSE(nameless.ok());
  EXPECT_EQ(nameless.status().message(), "the slurm.info reply's partitions[0].name is missing");
  auto nodes = SlurmInfoReply::from_json(nlohmann::json::parse(R"({"partitions":[{"name":"a","nodes":"1"}]})"));
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().message(), "the slurm.info reply's partitions[0].nodes is a string, not an integer");
}

}  // namespace
}  // namespace ferry::protocol
