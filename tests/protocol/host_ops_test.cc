// net.probe's messages (protocol/ops/host.h): the keys as before, the port required,
// an unknown field refused by name.
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

}  // namespace
}  // namespace ferry::protocol
