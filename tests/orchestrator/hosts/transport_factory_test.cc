// ssh_target_of (orchestrator/hosts/transport_factory.h): every SSH setting of a
// host entry, as the parser reads it from a workflow file into the host's SshLink,
// reaches the SshTarget its transport connects with. Each value differs from its
// default, so a setting the copy drops fails here.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <variant>

#include "orchestrator/hosts/transport_factory.h"
#include "workflows/parser.h"

namespace ferry {
namespace {

TEST(SshTargetOfTest, EverySshSettingOfTheHostEntryReachesTheTarget) {
  auto wf = workflow::parse_workflow("hosts.yaml", R"(name: hosts
hosts:
  gpu:
    transport: ssh
    address: gpu.example.com
    port: 2222
    user: trainer
    identity: /keys/id_ed25519
    known_hosts: /keys/known_hosts
    trust: first-use
    ssh_config: none
    ciphers: chacha20-poly1305@openssh.com
stages:
  train:
    host: gpu
    run: make
)");
  ASSERT_TRUE(wf.ok()) << wf.status().message();
  const auto* ssh = std::get_if<workflow::SshLink>(&wf->hosts.at(0).link);
  ASSERT_NE(ssh, nullptr);
  SshTarget t = ssh_target_of(wf->hosts.at(0).name, *ssh, "runs/work");
  const std::pair<std::string, std::string> strings[] = {{t.name, "gpu"},
                                                         {t.address, "gpu.example.com"},
                                                         {t.user, "trainer"},
                                                         {t.identity, "/keys/id_ed25519"},
                                                         {t.known_hosts, "/keys/known_hosts"},
                                                         {t.ssh_config, "none"},
                                                         {t.ciphers, "chacha20-poly1305@openssh.com"},
                                                         {t.workdir, "runs/work"}};
  for (const auto& [got, want] : strings) EXPECT_EQ(got, want);
  EXPECT_EQ(t.port, 2222);
  EXPECT_TRUE(t.trust_first_use);
}

}  // namespace
}  // namespace ferry
