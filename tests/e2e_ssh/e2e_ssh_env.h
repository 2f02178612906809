// End-to-end helpers for runs over SSH hosts: the real `ferry` binary against the
// network-namespace testbed (tests/testbed/). Reads $FERRY_TESTBED/hosts.json,
// writes workflow host entries for it, runs `ferry`, reads `ferry status --json`
// and the events table. Each test gets its own FERRY_HOME and its own host
// workdirs (absolute paths under a temp folder: every testbed host shares this
// machine's file system, so the test reads what a job wrote directly).
// Tests only; one thread.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/orchestrator/hosts/ssh/testbed_env.h"
#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry::e2e {

// The testbed's hosts.json and script, read as the SSH tests read them.
using testbed::Defer;
using testbed::Host;
using testbed::LinkCut;
using testbed::Testbed;
// The test support's file and wait helpers (tests/support/process.h), which every
// test of a run over SSH calls.
using testing::exists;
using testing::read_text;
using testing::wait_until;
using testing::write_text;

struct Event {
  std::string stage, type;
  int64_t ts_ms = 0;
  std::string detail;
};

/// Base fixture: one FERRY_HOME and one folder of host workdirs per test.
class SshRunTest : public testing::FerryHomeTest {
 protected:
  SshRunTest() : FerryHomeTest(180) {}

  void SetUp() override {
    if (!testbed::load(&tb_)) GTEST_SKIP() << "FERRY_TESTBED not set (run through ctest -L testbed)";
    ASSERT_GE(tb_.hosts.size(), 3u) << "the e2e tests need 3 testbed hosts";
  }

  /// The workdir host `name` gets in this test (created by its agent).
  std::string workdir(const std::string& name) const { return work_.file(name); }

  /// A workflow `hosts:` entry for testbed host `i` (0-based) under the testbed's
  /// name, overridable key by key.
  std::string host_entry(size_t i, const std::map<std::string, std::string>& over = {}) const {
    const Host& h = tb_.hosts[i];
    std::map<std::string, std::string> kv = {{"transport", "ssh"},
                                             {"address", h.address},
                                             {"user", tb_.user},
                                             {"identity", tb_.identity},
                                             {"known_hosts", tb_.known_hosts},
                                             {"ssh_config", "none"},
                                             {"workdir", workdir(h.name)},
                                             {"give_up", "5m"}};
    for (const auto& [k, v] : over) kv[k] = v;
    std::string out = "  " + h.name + ": {";
    const char* sep = "";
    for (const auto& [k, v] : kv) {
      out += sep + k + ": " + v;
      sep = ", ";
    }
    return out + "}\n";
  }

  /// Every event of `run` (and `stage`, when given), in the order recorded.
  std::vector<Event> events(const std::string& run, const std::string& stage_name = "") {
    std::string sql = "SELECT stage, type, ts_ms, detail FROM events WHERE run_id='" + run + "'" +
                      (stage_name.empty() ? "" : " AND stage='" + stage_name + "'") + " ORDER BY seq";
    auto r = testing::run_process({"sqlite3", "-cmd", ".timeout 10000", "-json", home_.file("ferry.db"), sql}, {}, 30);
    std::vector<Event> out;
    if (r.exit_code != 0 || r.out.empty()) return out;
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_array()) return out;
    for (const auto& e : j)
      out.push_back({e.value("stage", ""), e.value("type", ""), e.value("ts_ms", int64_t{0}), e.value("detail", "")});
    return out;
  }

  int count(const std::vector<Event>& evs, const std::string& type) {
    int n = 0;
    for (const auto& e : evs) n += e.type == type;
    return n;
  }

  /// Whether the coordinator has noticed that `host` is cut off (a run-level event).
  bool noticed_unreachable(const std::string& run, const std::string& host) {
    for (const auto& e : events(run, "")) {
      if (e.type == "host.unreachable" && e.detail.find("\"" + host + "\"") != std::string::npos) return true;
    }
    return false;
  }

  static std::string dump(const std::vector<Event>& evs) {
    std::string s;
    for (const auto& e : evs) s += std::to_string(e.ts_ms) + " " + e.stage + " " + e.type + " " + e.detail + "\n";
    return s;
  }

  /// The coordinator's copy of a stage attempt's log.
  std::string log_file(const std::string& run, const std::string& stage_name, int attempt = 1) const {
    return home_.path() + "/logs/" + run + "/" + stage_name + "/" + std::to_string(attempt) + ".log";
  }

  /// Ends a process the test started (or a job it made) if it is still there.
  static void end_process(pid_t pid) {
    if (pid > 0 && testing::process_running(pid)) ::kill(pid, SIGKILL);
  }
  /// Ends the job whose pid the job itself wrote to `pid_file`.
  static void end_job(const std::string& pid_file) {
    if (!testing::exists(pid_file)) return;
    pid_t pid = std::atoi(testing::read_text(pid_file).c_str());
    if (pid > 0 && testing::process_running(pid)) ::kill(-pid, SIGKILL), ::kill(pid, SIGKILL);
  }

  Testbed tb_;
};

}  // namespace ferry::e2e
