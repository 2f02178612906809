// `ferry hosts check` (orchestrator/hosts/hosts_check.h) without agent processes or SSH: each
// host's link is an InProcessTransport (tests/support/in_process_transport.h), an
// AgentServer in this process over a folder of the test's, and a host whose links are
// all refused stands for one that is down. The same check through the real binaries
// and sshd is SshRunTest.HostsCheckReportsAgentsAndTheReachabilityMatrix.
#include "orchestrator/hosts/hosts_check.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/support/in_process_transport.h"
#include "tests/support/process.h"
#include "workflows/parser.h"

namespace ferry {
namespace {

using testing::LinkFaults;

TEST(HostsCheckUnitTest, AHostThatIsDownIsReportedWithItsCauseAndTheOthersAreStillChecked) {
  testing::TempDir dir;
  auto wf = workflow::parse_workflow(dir.file("wf.yaml"), "name: check\nhosts:\n  up:\n    workdir: " + dir.file("up") +
                                                              "\n  down:\n    workdir: " + dir.file("down") +
                                                              "\nstages:\n  s:\n    host: up\n"
                                                              "    run: \"true\"\n");
  ASSERT_TRUE(wf.ok()) << wf.status().message();
  auto down = std::make_shared<LinkFaults>();
  down->refuse_links(LinkFaults::kForever);

  nlohmann::json report = check_hosts(*wf, dir.file("home"), testing::in_process_transports({{"down", down}}));

  ASSERT_EQ(report["hosts"].size(), 2u) << report.dump(2);
  const nlohmann::json& u = report["hosts"][0];
  const nlohmann::json& d = report["hosts"][1];
  EXPECT_EQ(u["name"], "up");
  EXPECT_EQ(u["connected"], true) << u.dump(2);
  EXPECT_GT(u["info"].value("cores", 0), 0) << "the agent's host.info did not reach the report: " << u.dump(2);
  EXPECT_EQ(u["reaches_coordinator"], true);
  EXPECT_EQ(d["name"], "down");
  EXPECT_EQ(d["connected"], false) << d.dump(2);
  EXPECT_NE(d.value("error", std::string()).find("refused a link"), std::string::npos) << d.dump(2);
  EXPECT_EQ(down->links_opened(), 0);

  const std::string text = render_hosts_check(report);
  EXPECT_NE(text.find("up"), std::string::npos) << text;
  EXPECT_NE(text.find("refused a link"), std::string::npos) << "the cause is not shown: " << text;
}

}  // namespace
}  // namespace ferry
