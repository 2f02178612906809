// Test helpers for the network-namespace testbed (tests/testbed/testbed.sh):
// reads $FERRY_TESTBED/hosts.json, builds SshTargets, runs the script, watches
// sshd logs. Tests only; one thread.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/shell_quote.h"
#include "orchestrator/hosts/ssh/ssh_target.h"
#include "tests/support/defer.h"

namespace ferry::testbed {

struct Host {
  std::string name, address, coordinator_address, workdir, netns, sshd_log;
  int port = 22;
};

struct Testbed {
  std::string state_dir, script, identity, known_hosts, user;
  std::vector<Host> hosts;

  SshTarget target(size_t i) const {
    SshTarget t;
    t.name = hosts[i].name;
    t.address = hosts[i].address;
    t.port = hosts[i].port;
    t.user = user;
    t.identity = identity;
    t.known_hosts = known_hosts;
    // Nothing trusted on first use leaks between tests or from the developer's
    // $FERRY_HOME: a test of first use names its own file.
    t.first_use_known_hosts = "/dev/null";
    t.workdir = hosts[i].workdir;
    t.ssh_config = "none";  // a developer's ~/.ssh/config must not change test results
    return t;
  }

  /// Runs `testbed.sh ARGS STATE_DIR`; returns the exit code.
  int run(const std::string& args) const {
    std::string cmd = shell_quote(script) + " " + args + " " + shell_quote(state_dir);
    return std::system(cmd.c_str());
  }
};

/// A host's link that a test cuts (`testbed.sh cut HOST`) and restores. Once a cut was
/// tried, the link is restored when this goes out of scope unless the test restored it:
/// a test that stops early (a failed assertion) leaves no host cut off for the next.
/// Declared after a Defer that ends the test's processes, it restores before they end.
class LinkCut {
 public:
  LinkCut(const Testbed& tb, std::string host) : tb_(tb), host_(std::move(host)) {}
  LinkCut(const LinkCut&) = delete;
  LinkCut& operator=(const LinkCut&) = delete;
  ~LinkCut() {
    if (cut_) tb_.run("restore " + host_);
  }

  /// The script's exit code: 0 when the link is cut.
  int cut() {
    cut_ = true;
    return tb_.run("cut " + host_);
  }
  /// The script's exit code: 0 when the link is back.
  int restore() {
    int rc = tb_.run("restore " + host_);
    if (rc == 0) cut_ = false;
    return rc;
  }

 private:
  const Testbed& tb_;
  std::string host_;
  bool cut_ = false;
};

/// Loads the testbed named by $FERRY_TESTBED, or returns false (test skipped).
inline bool load(Testbed* tb) {
  const char* dir = std::getenv("FERRY_TESTBED");
  const char* script = std::getenv("FERRY_TESTBED_SCRIPT");
  if (dir == nullptr || script == nullptr) return false;
  std::ifstream in(std::string(dir) + "/hosts.json");
  EXPECT_TRUE(in.good()) << "no hosts.json in " << dir << ": is the testbed up?";
  if (!in.good()) return false;
  nlohmann::json j = nlohmann::json::parse(in);
  tb->state_dir = j.at("state_dir");
  tb->script = script;
  tb->identity = j.at("identity");
  tb->known_hosts = j.at("known_hosts");
  tb->user = j.at("user");
  for (const auto& h : j.at("hosts")) {
    Host x;
    x.name = h.at("name");
    x.address = h.at("address");
    x.coordinator_address = h.at("coordinator_address");
    x.workdir = h.at("workdir");
    x.netns = h.at("netns");
    x.sshd_log = h.at("sshd_log");
    x.port = h.at("port");
    tb->hosts.push_back(x);
  }
  return true;
}

#define FERRY_LOAD_TESTBED_OR_SKIP(tb)                                              \
  do {                                                                              \
    if (!::ferry::testbed::load(&(tb))) GTEST_SKIP() << "FERRY_TESTBED not set (run via ctest)"; \
  } while (0)

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

inline bool file_exists(const std::string& path) { return std::ifstream(path).good(); }

/// Size of a file now (the start of the slice a test will look at later).
inline size_t file_size(const std::string& path) { return read_file(path).size(); }

/// Waits (polling the file, bounded by `timeout_ms`) until the part of `path`
/// after `offset` satisfies `pred`; returns that part.
inline std::string wait_for_log(const std::string& path, size_t offset,
                                const std::function<bool(const std::string&)>& pred, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string slice;
  for (;;) {
    std::string all = read_file(path);
    slice = all.size() > offset ? all.substr(offset) : "";
    if (pred(slice) || std::chrono::steady_clock::now() >= deadline) return slice;
    usleep(20 * 1000);  // the file is the only event source we have
  }
}

/// A fresh private temp dir, removed at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/ferry-ssh-test.XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + shell_quote(path)).c_str()); }
};

using ::ferry::testing::Defer;

}  // namespace ferry::testbed
