// The fault suite (issue 6): the dflash-tiny workflow on the SSH testbed while
// things break — a link cut during training, a link cut while checkpoints are
// relayed, the coordinator SIGKILLed at seeded random moments, the trainer's agent
// killed. After each, `ferry resume` (where needed) finishes the run, and every
// trial must end with: the run succeeded, the drafter at the destination is
// bit-identical to the one trained, no command stage was launched twice, and τ
// equals the uninterrupted run's τ. Prints a table of trials and outcomes.
//
// Training uses short settings (tens of steps) so the suite fits in CI; the
// trainers are deterministic (fixed seeds, one thread), so every trial trains the
// same bytes and a τ that differs means something went wrong.
#include <dirent.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "tests/e2e_ssh/e2e_ssh_env.h"

namespace ferry::e2e {
namespace {

constexpr int kRunTimeoutS = 900;

struct Outcome {
  std::string trial;
  bool succeeded = false;
  bool identical = false;
  bool launched_once = false;
  double tau = -1;
  int resumes = 0;
  std::string note;
};

std::vector<Outcome>& table() {
  static std::vector<Outcome> t;
  return t;
}

bool same_tree(const std::string& a, const std::string& b) {
  auto r = testing::run_process({"diff", "-r", "-x", ".ferry-complete", a, b});
  return r.exit_code == 0;
}

class FaultSuiteTest : public SshRunTest {
 protected:
  // The example workflow with the testbed's hosts and CI-sized training.
  std::string workflow() {
    std::ifstream in(std::string(FERRY_SOURCE_DIR) + "/examples/dflash-tiny/workflow.yaml");
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    size_t hosts = text.find("\nhosts:\n");
    size_t stages = text.find("\nstages:\n");
    EXPECT_NE(hosts, std::string::npos);
    std::string ssh_hosts = "\nhosts:\n" + host_entry(0) + host_entry(1);
    // trainer = h1, evaluator = h2: the testbed keeps them apart.
    size_t p;
    while ((p = ssh_hosts.find("  h1:")) != std::string::npos) ssh_hosts.replace(p, 5, "  trainer:");
    while ((p = ssh_hosts.find("  h2:")) != std::string::npos) ssh_hosts.replace(p, 5, "  evaluator:");
    text = text.substr(0, hosts) + ssh_hosts + text.substr(stages);
    // Short training gives a weak drafter: the gate is not what this suite tests.
    p = text.find("min_tau: 2.0");
    if (p != std::string::npos) text.replace(p, 12, "min_tau: 1.0");
    p = text.find("min_ratio_to_reference: 0.6");
    if (p != std::string::npos) text.replace(p, 27, "min_ratio_to_reference: 0.1");
    return write_workflow(text);
  }
  std::vector<std::string> run_args() {
    return {"run", workflow(), "-p", "bin=" + testing::bin_dir(), "-p", "local=" + work_.file("coordinator"),
            "-p", "target_steps=30", "-p", "drafter_steps=30"};
  }
  std::string run_id() {
    auto r = ferry({"runs", "--json"}, 30);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_array() && !j.empty() ? j[0]["id"].get<std::string>() : "";
  }
  // Resumes until the run has ended, at most `limit` times.
  int finish(const std::string& run, int limit = 3) {
    int resumes = 0;
    for (; resumes < limit; ++resumes) {
      auto st = status(run);
      if (st["state"] != "running" && st["state"] != "pending") break;
      ferry({"resume", run}, kRunTimeoutS);
    }
    return resumes;
  }
  Outcome check(const std::string& trial, const std::string& run, int resumes) {
    Outcome o;
    o.trial = trial;
    o.resumes = resumes;
    auto st = status(run);
    o.succeeded = st["state"] == "succeeded";
    o.identical = same_tree(workdir("h1") + "/drafter", workdir("h2") + "/models/drafter") &&
                  same_tree(workdir("h1") + "/drafter", work_.file("coordinator") + "/" + run + "/drafter");
    auto evs = events(run);
    o.launched_once = true;
    for (const char* s : {"data", "target", "drafter", "reference", "report"}) {
      int launched = 0;
      for (const auto& e : evs) launched += e.stage == s && e.type == "attempt.launched";
      if (launched != 1) {
        o.launched_once = false;
        o.note += std::string(s) + " launched " + std::to_string(launched) + "x; ";
      }
    }
    auto ev = stage(st, "eval");
    if (ev.contains("metrics") && ev["metrics"].contains("tau")) o.tau = ev["metrics"]["tau"].get<double>();
    table().push_back(o);
    return o;
  }
  void expect_good(const Outcome& o) {
    EXPECT_TRUE(o.succeeded) << o.trial << ": " << o.note;
    EXPECT_TRUE(o.identical) << o.trial << ": the drafter differs at the destination";
    EXPECT_TRUE(o.launched_once) << o.trial << ": " << o.note;
    static double baseline_tau = -1;
    if (o.trial == "uninterrupted") baseline_tau = o.tau;
    ASSERT_GT(baseline_tau, 0) << "the uninterrupted trial must run first";
    EXPECT_DOUBLE_EQ(o.tau, baseline_tau) << o.trial;
  }
  bool stage_started(const std::string& run, const std::string& s) {
    for (const auto& e : events(run, s)) {
      if (e.type == "attempt.launched" || e.type == "copy.started") return true;
    }
    return false;
  }
  // The agent serving this test's trainer workdir: ours, found by its command line.
  pid_t trainer_agent_pid() {
    DIR* d = opendir("/proc");
    pid_t found = -1;
    while (dirent* e = d ? readdir(d) : nullptr) {
      pid_t pid = std::atoi(e->d_name);
      if (pid <= 0) continue;
      std::string cmd = testing::read_text("/proc/" + std::to_string(pid) + "/cmdline");
      for (auto& c : cmd) c = c == '\0' ? ' ' : c;
      if (cmd.find("ferry-agent") != std::string::npos && cmd.find(" serve --workdir " + workdir("h1")) != std::string::npos) {
        found = pid;
      }
    }
    if (d) closedir(d);
    return found;
  }
};

TEST_F(FaultSuiteTest, AllTrials) {
  // 1. The reference point.
  auto r = ferry(run_args(), kRunTimeoutS);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string base_run = run_id();
  expect_good(check("uninterrupted", base_run, 0));

  // Each trial trains and relays from scratch (the agents stay installed).
  auto fresh = [&] {
    testing::run_process({"rm", "-rf", workdir("h1") + "/data", workdir("h1") + "/target", workdir("h1") + "/drafter",
                          workdir("h1") + "/reference", workdir("h2") + "/models", workdir("h2") + "/prompts.jsonl",
                          work_.file("coordinator")});
  };

  // 2. The trainer's link cut while the drafter trains.
  fresh();
  {
    pid_t c = spawn_ferry(run_args(), "cut-train.log");
    Defer guard{[&] { tb_.run("restore h1"); end_process(c); }};
    std::string run;
    ASSERT_TRUE(testing::wait_until([&] { run = run_id(); return !run.empty() && stage_started(run, "drafter"); },
                                    std::chrono::seconds(300)));
    ASSERT_EQ(tb_.run("cut h1"), 0);
    ASSERT_TRUE(testing::wait_until([&] { return count(events(run, "drafter"), "host.disconnected") > 0; },
                                    std::chrono::seconds(60)));
    ASSERT_EQ(tb_.run("restore h1"), 0);
    testing::wait_process(c, kRunTimeoutS);
    expect_good(check("link cut during training", run, finish(run)));
  }

  // 3. The evaluator's link cut as the checkpoints start to cross.
  fresh();
  {
    pid_t c = spawn_ferry(run_args(), "cut-copy.log");
    Defer guard{[&] { tb_.run("restore h2"); end_process(c); }};
    std::string run;
    ASSERT_TRUE(testing::wait_until([&] { run = run_id(); return !run.empty() && stage_started(run, "ship_target"); },
                                    std::chrono::seconds(300)));
    ASSERT_EQ(tb_.run("cut h2"), 0);
    ASSERT_TRUE(testing::wait_until([&] {
      for (const auto& e : events(run, "")) {
        if (e.type == "host.unreachable" && e.detail.find("evaluator") != std::string::npos) return true;
      }
      return false;
    }, std::chrono::seconds(60)));
    ASSERT_EQ(tb_.run("restore h2"), 0);
    testing::wait_process(c, kRunTimeoutS);
    expect_good(check("link cut during the relay", run, finish(run)));
  }

  // 4. The coordinator SIGKILLed at seeded random moments, then resumed.
  std::mt19937 rng(20261130);
  for (int trial = 0; trial < 2; ++trial) {
    fresh();
    int delay_ms = std::uniform_int_distribution<int>(3000, 40000)(rng);
    pid_t c = spawn_ferry(run_args(), "kill-" + std::to_string(trial) + ".log");
    Defer guard{[&] { end_process(c); }};
    std::string run;
    ASSERT_TRUE(testing::wait_until([&] { run = run_id(); return !run.empty(); }, std::chrono::seconds(60)));
    // The deliberate, seeded wait is the fault's timing, not a wait for an event.
    testing::wait_until([&] { return !testing::process_running(c); }, std::chrono::milliseconds(delay_ms));
    ::kill(c, SIGKILL);
    testing::wait_process(c, 30);
    Outcome o = check("coordinator SIGKILL at " + std::to_string(delay_ms) + " ms", run, finish(run));
    expect_good(o);
  }

  // 5. The trainer's agent killed while the drafter trains.
  fresh();
  {
    pid_t c = spawn_ferry(run_args(), "kill-agent.log");
    Defer guard{[&] { end_process(c); }};
    std::string run;
    ASSERT_TRUE(testing::wait_until([&] { run = run_id(); return !run.empty() && stage_started(run, "drafter"); },
                                    std::chrono::seconds(300)));
    pid_t agent = trainer_agent_pid();
    ASSERT_GT(agent, 0);
    ::kill(agent, SIGKILL);
    testing::wait_process(c, kRunTimeoutS);
    expect_good(check("trainer's agent killed", run, finish(run)));
  }

  std::printf("\nfault suite (dflash-tiny on the SSH testbed, short training):\n");
  std::printf("  %-36s %-9s %-10s %-13s %-8s %s\n", "trial", "run", "identical", "launched 1x", "resumes", "tau");
  for (const auto& o : table()) {
    std::printf("  %-36s %-9s %-10s %-13s %-8d %.4f %s\n", o.trial.c_str(), o.succeeded ? "ok" : "FAILED",
                o.identical ? "yes" : "NO", o.launched_once ? "yes" : "NO", o.resumes, o.tau, o.note.c_str());
  }
}

}  // namespace
}  // namespace ferry::e2e
