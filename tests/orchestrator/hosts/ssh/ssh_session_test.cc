// SshSession against real sshds in network namespaces (tests/testbed): connect and
// exec on every host, host-key refusal before any authentication, trust on first
// use, authentication errors, ssh config, and the testbed's own isolation promise.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

#include "orchestrator/hosts/ssh/ssh_session.h"
#include "tests/orchestrator/hosts/ssh/testbed_env.h"

namespace ferry {
namespace {

using testbed::Defer;
using testbed::TempDir;

class SshSessionTest : public ::testing::Test {
 protected:
  void SetUp() override { FERRY_LOAD_TESTBED_OR_SKIP(tb_); }

  // A target named `alias` that only the ssh config `config_text` (written in `dir`) explains.
  SshTarget target_from_config(const TempDir& dir, const std::string& alias, const std::string& config_text) {
    const std::string config = dir.path + "/config";
    testbed::write_file(config, config_text);
    SshTarget t;
    t.address = alias;
    t.known_hosts = tb_.known_hosts;
    t.ssh_config = config;
    return t;
  }

  // Runs `command` on host i and returns the result (asserting the session works).
  ExecResult run_on(size_t i, const std::string& command) {
    SshSession s(tb_.target(i));
    Status st = s.connect();
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return {};
    auto r = s.run(command, {}, 20000);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : ExecResult{};
  }

  // Connects with `t` (expected to fail) and returns the sshd log of that attempt,
  // once sshd has logged the connection's end.
  std::string refused_attempt_log(size_t host, const SshTarget& t, Status* out) {
    const std::string& log = tb_.hosts[host].sshd_log;
    size_t offset = testbed::file_size(log);
    SshSession s(t);
    *out = s.connect();
    s.disconnect();
    return testbed::wait_for_log(
        log, offset,
        [](const std::string& slice) {
          return slice.find("Connection closed by") != std::string::npos ||
                 slice.find("Disconnected from") != std::string::npos ||
                 slice.find("Connection reset by") != std::string::npos;
        },
        10000);
  }

  // A connection refused (permission denied) for the reason `why`, which the message names.
  static void expect_refused(const Status& st, const std::string& why) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st.to_string();
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  }

  testbed::Testbed tb_;
};

TEST_F(SshSessionTest, ConnectsAndRunsOnEveryHost) {
  ASSERT_GE(tb_.hosts.size(), 3u);
  for (size_t i = 0; i < tb_.hosts.size(); ++i) {
    SshSession s(tb_.target(i));
    Status st = s.connect();
    ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_EQ(s.describe(), "ssh root@" + tb_.hosts[i].address + ":22");
    EXPECT_NE(s.host_key_fingerprint().find("SHA256:"), std::string::npos);
    auto r = s.run("hostname -I");
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->exit_status, 0);
    EXPECT_NE(r->out.find(tb_.hosts[i].address), std::string::npos) << r->out;
    // Several commands on one session; exit codes, stderr and stdin all carried.
    auto r2 = s.run("echo oops >&2; exit 7");
    ASSERT_TRUE(r2.ok()) << r2.status().to_string();
    EXPECT_EQ(r2->exit_status, 7);
    EXPECT_EQ(r2->err, "oops\n");
    auto r3 = s.run("wc -c", std::string(100000, 'x'));
    ASSERT_TRUE(r3.ok()) << r3.status().to_string();
    EXPECT_EQ(r3->out, "100000\n");
  }
}

TEST_F(SshSessionTest, RunIsBoundedByItsTimeout) {
  SshSession s(tb_.target(0));
  ASSERT_TRUE(s.connect().ok());
  auto t0 = std::chrono::steady_clock::now();
  auto r = s.run("sleep 30", {}, 500);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST_F(SshSessionTest, UnknownHostKeyIsRefusedBeforeAuthentication) {
  TempDir dir;
  SshTarget t = tb_.target(0);
  t.known_hosts = dir.path + "/known_hosts";
  t.first_use_known_hosts = dir.path + "/ferry_known_hosts";
  testbed::write_file(t.known_hosts, "");
  Status st;
  std::string log = refused_attempt_log(0, t, &st);
  ASSERT_NO_FATAL_FAILURE(expect_refused(st, "unknown host key"));
  EXPECT_NE(st.message().find("SHA256:"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("ssh-keyscan -p 22 -t ed25519 " + tb_.hosts[0].address), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find(tb_.hosts[0].address + " ssh-ed25519 AAAA"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("trust: first-use"), std::string::npos) << st.message();
  EXPECT_EQ(testbed::read_file(t.known_hosts), "");  // nothing recorded
  EXPECT_FALSE(testbed::file_exists(t.first_use_known_hosts));
  // The proof that no credential was offered: sshd (LogLevel DEBUG1) saw the
  // connection and its end, and no userauth request in between.
  EXPECT_NE(log.find("Connection from " + tb_.hosts[0].coordinator_address), std::string::npos) << log;
  EXPECT_EQ(log.find("userauth-request"), std::string::npos) << log;
  EXPECT_EQ(log.find("Accepted"), std::string::npos) << log;
}

TEST_F(SshSessionTest, ChangedHostKeyIsRefusedEvenWithTrustFirstUse) {
  // known_hosts claims h1's address has h2's key: what a man in the middle looks like.
  std::string all = testbed::read_file(tb_.known_hosts);
  std::string h2_line;
  std::istringstream in(all);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(tb_.hosts[1].address + " ", 0) == 0) h2_line = line;
  }
  ASSERT_FALSE(h2_line.empty());
  std::string forged = tb_.hosts[0].address + h2_line.substr(tb_.hosts[1].address.size()) + "\n";
  TempDir dir;
  for (bool tofu : {false, true}) {
    SshTarget t = tb_.target(0);
    t.known_hosts = dir.path + "/known_hosts";
    t.trust_first_use = tofu;
    testbed::write_file(t.known_hosts, forged);
    Status st;
    std::string log = refused_attempt_log(0, t, &st);
    ASSERT_NO_FATAL_FAILURE(expect_refused(st, "HOST KEY CHANGED"));
    EXPECT_NE(st.message().find("SHA256:"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("ssh-keygen -R " + tb_.hosts[0].address), std::string::npos) << st.message();
    EXPECT_EQ(testbed::read_file(t.known_hosts), forged) << "tofu=" << tofu;
    EXPECT_EQ(log.find("userauth-request"), std::string::npos) << log;
  }
}

TEST_F(SshSessionTest, TrustFirstUseRecordsAnUnknownKeyInFerrysOwnFile) {
  TempDir dir;
  SshTarget t = tb_.target(1);
  t.known_hosts = dir.path + "/known_hosts";  // does not exist
  t.first_use_known_hosts = dir.path + "/ferry/known_hosts";  // nor does its folder
  t.trust_first_use = true;
  {
    SshSession s(t);
    Status st = s.connect();
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  std::string recorded = testbed::read_file(t.first_use_known_hosts);
  EXPECT_NE(recorded.find(tb_.hosts[1].address + " ssh-ed25519 "), std::string::npos) << recorded;
  EXPECT_FALSE(testbed::file_exists(t.known_hosts)) << "the user's known_hosts is never written";
  // From now on the key is simply known.
  t.trust_first_use = false;
  SshSession s2(t);
  Status st2 = s2.connect();
  EXPECT_TRUE(st2.ok()) << st2.to_string();
}

// Review F23: with `UserKnownHostsFile /dev/null` (common for cloud VMs) a first-use
// key was written nowhere and every later key accepted; lanes racing on a new host
// each recorded the key they were offered.
TEST_F(SshSessionTest, FirstUseRecordsOneKeyInFerrysOwnFileAndThenHoldsToIt) {
  TempDir dir;
  SshTarget t = tb_.target(2);
  t.known_hosts = "/dev/null";
  t.first_use_known_hosts = dir.path + "/known_hosts";
  t.trust_first_use = true;
  constexpr int kRacers = 6;
  std::vector<Status> results(kRacers);
  std::vector<std::thread> racers;
  for (int i = 0; i < kRacers; ++i) {
    racers.emplace_back([&, i] {
      SshSession s(t);
      results[i] = s.connect();
    });
  }
  for (auto& r : racers) r.join();
  for (const Status& st : results) EXPECT_TRUE(st.ok()) << st.to_string();
  std::string recorded = testbed::read_file(t.first_use_known_hosts);
  size_t lines = std::count(recorded.begin(), recorded.end(), '\n');
  EXPECT_EQ(lines, 1u) << recorded;

  // A man in the middle on h3's address (h1's key) is refused, first use or not.
  std::string h1_key;
  std::istringstream in(testbed::read_file(tb_.known_hosts));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(tb_.hosts[0].address + " ", 0) == 0) h1_key = line.substr(tb_.hosts[0].address.size());
  }
  ASSERT_FALSE(h1_key.empty());
  const std::string forged = tb_.hosts[2].address + h1_key + "\n";
  testbed::write_file(t.first_use_known_hosts, forged);
  Status st;
  std::string log = refused_attempt_log(2, t, &st);
  ASSERT_NO_FATAL_FAILURE(expect_refused(st, "HOST KEY CHANGED"));
  EXPECT_NE(st.message().find(t.first_use_known_hosts), std::string::npos) << st.message();
  EXPECT_EQ(testbed::read_file(t.first_use_known_hosts), forged);
  EXPECT_EQ(log.find("userauth-request"), std::string::npos) << log;
}

TEST_F(SshSessionTest, WrongUserKeyGivesAClearAuthenticationError) {
  TempDir dir;
  const std::string key = dir.path + "/wrong_key";
  ASSERT_EQ(std::system(("ssh-keygen -q -t ed25519 -N '' -f " + key + " </dev/null >/dev/null").c_str()), 0);
  SshTarget t = tb_.target(2);
  t.identity = key;
  SshSession s(t);
  Status st = s.connect();
  ASSERT_NO_FATAL_FAILURE(
      expect_refused(st, "authentication failed for root@" + tb_.hosts[2].address + ":22 with keys: " + key));
}

TEST_F(SshSessionTest, MissingIdentityFileIsNamed) {
  SshTarget t = tb_.target(0);
  t.identity = "/nonexistent/id_ed25519";
  SshSession s(t);
  Status st = s.connect();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("/nonexistent/id_ed25519"), std::string::npos) << st.message();
}

TEST_F(SshSessionTest, SshConfigSuppliesHostNameUserAndIdentity) {
  TempDir dir;
  SshTarget t = target_from_config(dir, "tb-alias",
                                   "Host tb-alias\n  HostName " + tb_.hosts[1].address + "\n  User root\n  Port 22\n" +
                                       "  IdentityFile " + tb_.identity + "\n");
  t.name = "alias";
  SshSession s(t);
  Status st = s.connect();
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(s.host(), tb_.hosts[1].address);
  EXPECT_EQ(s.user(), "root");
  auto r = s.run("hostname -I");
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->out.find(tb_.hosts[1].address), std::string::npos);
}

// ProxyJump in libssh 0.10 becomes `ssh -W '[%h]:%p' jump` (a ProxyCommand run with
// the OpenSSH client). The OpenSSH client reads the jump host's key and identity from
// the real ~/.ssh, which a test must not touch, so this exercises the same
// ProxyCommand path with those options spelled out: through h1 to h1 itself.
TEST_F(SshSessionTest, ProxyCommandFromTheSshConfigCarriesTheSession) {
  TempDir dir;
  const std::string& h1 = tb_.hosts[0].address;
  SshSession s(target_from_config(dir, "via-proxy",
                                  "Host via-proxy\n  HostName " + h1 + "\n  User root\n  IdentityFile " + tb_.identity +
                                      "\n  ProxyCommand ssh -i " + tb_.identity +
                                      " -o UserKnownHostsFile=" + tb_.known_hosts +
                                      " -o BatchMode=yes -o StrictHostKeyChecking=yes -W %h:%p root@" + h1 + "\n"));
  Status st = s.connect();
  ASSERT_TRUE(st.ok()) << st.to_string();
  auto r = s.run("echo $SSH_CLIENT");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  // The inner session arrives from h1 itself (the proxy), not from the coordinator.
  EXPECT_EQ(r->out.rfind(h1 + " ", 0), 0u) << r->out;
}

// The testbed's promise (docs/DESIGN.md §7): hosts reach the coordinator, never each other.
TEST_F(SshSessionTest, HostsCannotReachEachOtherButTheCoordinatorReachesAll) {
  for (size_t i = 0; i < tb_.hosts.size(); ++i) {
    SshSession s(tb_.target(i));
    ASSERT_TRUE(s.connect().ok()) << tb_.hosts[i].name;  // the coordinator reaches every host
    // One remote command probes every other host (each exec costs a shell start-up).
    std::string probe;
    for (size_t j = 0; j < tb_.hosts.size(); ++j) {
      if (i == j) continue;
      const std::string& a = tb_.hosts[j].address;
      probe += "if timeout 3 bash -c '</dev/tcp/" + a + "/22' 2>/dev/null; then echo REACHED " + a +
               "; else echo blocked " + a + "; fi; ";
    }
    auto r = s.run(probe, {}, 20000);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->out.find("REACHED"), std::string::npos) << tb_.hosts[i].name << ": " << r->out;
    EXPECT_NE(r->out.find("blocked"), std::string::npos) << r->out;  // the probe did run
  }
  // No forwarding on the coordinator side of any host link.
  for (const auto& h : tb_.hosts) {
    std::string veth = h.netns;
    veth.erase(veth.find('-'), 1);
    std::string v = testbed::read_file("/proc/sys/net/ipv4/conf/" + veth + "c/forwarding");
    EXPECT_EQ(v, "0\n") << veth;
  }
}

TEST_F(SshSessionTest, LinkLetsTwoHostsReachEachOther) {
  ASSERT_EQ(tb_.run("link h1 h2"), 0);
  Defer unlink{[&] { tb_.run("unlink h1 h2"); }};
  auto probe = [&](size_t from, size_t to) {
    auto r = run_on(from, "timeout 3 bash -c '</dev/tcp/" + tb_.hosts[to].address + "/22' && echo REACHED");
    return r.out.find("REACHED") != std::string::npos;
  };
  EXPECT_TRUE(probe(0, 1));
  EXPECT_TRUE(probe(1, 0));
  EXPECT_FALSE(probe(0, 2));  // only the linked pair
  ASSERT_EQ(tb_.run("unlink h1 h2"), 0);
  EXPECT_FALSE(probe(0, 1));
}

TEST_F(SshSessionTest, ConnectToADeadPortFailsFast) {
  SshTarget t = tb_.target(0);
  t.port = 2222;  // nothing listens there
  t.connect_timeout_ms = 3000;
  SshSession s(t);
  auto t0 = std::chrono::steady_clock::now();
  Status st = s.connect();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
}

// A login whose authentication is never answered (here sshd waits on an
// AuthorizedKeysCommand that hangs; a link cut in the middle of a login looks the
// same from the client) ends in libssh's timeout, which is a silence to retry, not
// a refused key: it used to read "authentication failed", which the coordinator
// takes as final and gives the host up at once (the fault suite's relay cut).
TEST_F(SshSessionTest, AnAuthenticationLeftUnansweredIsRetriedNotTakenForARefusedKey) {
  TempDir dir;
  const testbed::Host& h = tb_.hosts[0];
  const std::string host_dir = h.sshd_log.substr(0, h.sshd_log.rfind('/'));
  const int port = 2201;
  std::string config = testbed::read_file(host_dir + "/sshd_config");
  auto set = [&config](const std::string& key, const std::string& line) {
    size_t at = config.find("\n" + key + " ");
    ASSERT_NE(at, std::string::npos) << key;
    config.replace(at + 1, config.find('\n', at + 1) - at - 1, line);
  };
  set("Port", "Port " + std::to_string(port));
  set("PidFile", "PidFile " + dir.path + "/sshd.pid");
  set("AuthorizedKeysFile", "AuthorizedKeysFile none\nAuthorizedKeysCommand /usr/bin/sleep 20\n"
                            "AuthorizedKeysCommandUser root");
  testbed::write_file(dir.path + "/sshd_config", config);
  const std::string log = dir.path + "/sshd.log";
  ASSERT_EQ(std::system(("ip netns exec " + h.netns + " /usr/sbin/sshd -D -f " + dir.path + "/sshd_config -E " + log +
                         " </dev/null >/dev/null 2>&1 &")
                            .c_str()),
            0);
  Defer stop{[&] {
    int pid = std::atoi(testbed::read_file(dir.path + "/sshd.pid").c_str());
    if (pid > 0) ::kill(pid, SIGTERM);
  }};
  ASSERT_NE(testbed::wait_for_log(
                log, 0, [](const std::string& s) { return s.find("Server listening") != std::string::npos; }, 10000)
                .find("Server listening"),
            std::string::npos);
  // The host key, recorded for this port.
  std::string pub = testbed::read_file(host_dir + "/ssh_host_ed25519_key.pub");
  testbed::write_file(dir.path + "/known_hosts",
                      "[" + h.address + "]:" + std::to_string(port) + " " + pub.substr(0, pub.rfind(' ')) + "\n");
  SshTarget t = tb_.target(0);
  t.port = port;
  t.known_hosts = dir.path + "/known_hosts";
  t.connect_timeout_ms = 3000;
  SshSession s(t);
  Status st = s.connect();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.to_string();
  EXPECT_EQ(st.message().find("authentication failed"), std::string::npos) << st.message();
  // It did reach the authentication: sshd was asked about the key.
  EXPECT_NE(testbed::read_file(log).find("userauth_pubkey"), std::string::npos) << testbed::read_file(log);
}

}  // namespace
}  // namespace ferry
