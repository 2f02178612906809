// Eval stages on SSH hosts (issue 17), end to end on the testbed: the real
// `ferry` sends its eval worker to the host over SSH, runs it there as a detached
// job and fetches its report. Covers: the same report as the coordinator's own
// eval of the same files; a link cut in the middle of the eval (one launch, the
// report arrives); a SIGKILLed coordinator and `ferry resume` re-attaching to the
// running eval; a sharded eval over two hosts, one cut and resumed; `ferry hosts
// check` telling which hosts can run evals and why not. Cuts a link of the shared testbed: RUN_SERIAL in CMake. The
// models are the engine's deterministic tiny ones (ferry-tiny-models suite), written by the test into the host's
// workdir (testbed hosts share this machine's file system).
#include <signal.h>

#include <chrono>
#include <map>
#include <set>

#include "tests/e2e_ssh/e2e_ssh_env.h"
#include "tests/eval/stage/comparable_report.h"

namespace ferry::e2e {
namespace {

using std::chrono::seconds;

constexpr int kRunTimeoutS = 300;
constexpr auto kDecodingDeadline = seconds(120);  // cold: agent and worker upload over ssh
constexpr auto kCutFor = seconds(20);             // past the link watchdog, so the cut is seen
// Long enough that the eval is still decoding when the test acts on it: the
// reference drafter never agrees, so it decodes token by token (~20 s here).
constexpr int kLongEvalTokens = 400;

class SshEvalTest : public SshRunTest {
 protected:
  void make_models(const std::string& host) {
    ASSERT_EQ(testing::run_process({"mkdir", "-p", workdir(host)}).exit_code, 0);
    auto r = testing::run_process({testing::bin_dir() + "/ferry-tiny-models", "suite", "--out", workdir(host)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static std::string eval_stage(const std::string& name, const std::string& host, const std::string& dir,
                                int max_new_tokens) {
    std::string p = dir.empty() ? "" : dir + "/";
    return "  " + name + ":\n    kind: eval\n" + (host.empty() ? "" : "    host: " + host + "\n") + "    target: " + p +
           "oracle-target\n    drafter: " + p + "oracle-agree\n    reference: " + p +
           "oracle-disagree\n    prompts: " + p +
           "oracle-prompts.jsonl\n    max_new_tokens: " + std::to_string(max_new_tokens) +
           "\n    threads: 1\n    gate: {min_tau: 3.5}\n";
  }
  nlohmann::json report(const std::string& run, const std::string& stage_name) {
    for (const auto& e : events(run, stage_name)) {
      if (e.type == "eval.report") return nlohmann::json::parse(e.detail);
    }
    return nullptr;
  }
  // Waits until the worker on the host is decoding (its progress is in the coordinator's log copy).
  bool wait_decoding(const std::string& run, const std::string& stage_name) {
    return wait_until([&] { return read_text(log_file(run, stage_name)).find("[eval] decoding") != std::string::npos; },
                      kDecodingDeadline);
  }
  std::set<int64_t> job_pids(const std::vector<Event>& evs) {
    std::set<int64_t> pids;
    for (const auto& e : evs) {
      if (e.type == "attempt.launched" || e.type == "attempt.reattached") {
        pids.insert(nlohmann::json::parse(e.detail).value("pid", int64_t{0}));
      }
    }
    return pids;
  }
};

TEST_F(SshEvalTest, EvalOnAnSshHostGivesTheSameReportAsInTheCoordinator) {
  make_models("h1");
  std::string wf =
      write_workflow("name: same\nhosts:\n" + host_entry(0) + "stages:\n" + eval_stage("here", "", workdir("h1"), 16) +
                     eval_stage("there", "h1", "", 16) + "    needs: here\n");
  auto r = ferry({"run", wf}, kRunTimeoutS);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = status("same-1");
  EXPECT_EQ(stage(st, "there")["host"], "h1");
  EXPECT_EQ(stage(st, "there")["metrics"]["tau"], stage(st, "here")["metrics"]["tau"]);
  auto here = report("same-1", "here"), there = report("same-1", "there");
  ASSERT_TRUE(here.is_object() && there.is_object());
  EXPECT_EQ(testing::comparable_report(there).dump(1), testing::comparable_report(here).dump(1));
  // The worker ran on h1: it sits in h1's workdir under its hash.
  auto worker = testing::run_process({"sh", "-c", "ls " + workdir("h1") + "/.ferry/eval-worker/*/ferry-eval"});
  EXPECT_EQ(worker.exit_code, 0) << worker.err;
  auto logs = ferry({"logs", "same-1", "there"});
  EXPECT_NE(logs.out.find("gate: PASSED"), std::string::npos) << logs.out;
}

TEST_F(SshEvalTest, LinkCutDuringARemoteEvalIsRiddenOut) {
  make_models("h2");
  const Host& h = tb_.hosts[1];
  std::string wf = write_workflow("name: evalcut\nhosts:\n" + host_entry(1) + "stages:\n" +
                                  eval_stage("eval", "h2", "", kLongEvalTokens));
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  ASSERT_GT(coordinator, 0);
  Defer end_coordinator{[&] { end_process(coordinator); }};
  LinkCut link(tb_, h.name);  // restored, if the test stops early, before the coordinator ends
  ASSERT_TRUE(wait_decoding("evalcut-1", "eval")) << read_text(work_.file("run.log"));
  ASSERT_EQ(link.cut(), 0);
  bool seen_disconnected = false;
  auto cut_at = std::chrono::steady_clock::now();
  wait_until(
      [&] {
        auto s = stage(status("evalcut-1"), "eval");
        seen_disconnected = seen_disconnected || s.value("disconnected_since_ms", int64_t{0}) > 0;
        return std::chrono::steady_clock::now() - cut_at >= kCutFor;
      },
      kCutFor + seconds(5));
  bool finished_during_cut = read_text(work_.file("run.log")).find("eval succeeded") != std::string::npos;
  ASSERT_EQ(link.restore(), 0);
  EXPECT_EQ(testing::wait_process(coordinator, kRunTimeoutS), 0) << read_text(work_.file("run.log"));
  coordinator = -1;
  EXPECT_FALSE(finished_during_cut) << "the run ended while the link was down: the eval did not need it";
  EXPECT_TRUE(seen_disconnected) << "`ferry status` never showed the eval cut off";
  auto st = stage(status("evalcut-1"), "eval");
  EXPECT_EQ(st["state"], "succeeded") << st.dump(2);
  EXPECT_EQ(st["attempt"], 1);
  auto ev = events("evalcut-1", "eval");
  EXPECT_EQ(count(ev, "attempt.launched"), 1) << dump(ev);
  EXPECT_EQ(job_pids(ev).size(), 1u) << dump(ev);
  auto rep = report("evalcut-1", "eval");
  ASSERT_TRUE(rep.is_object()) << dump(ev);
  EXPECT_EQ(rep["candidate"]["responses"], 20);
  EXPECT_GT(st["metrics"]["tau"].get<double>(), 3.5);
}

TEST_F(SshEvalTest, ResumeAfterSigkillReattachesToTheRunningEval) {
  make_models("h3");
  std::string wf = write_workflow("name: evalkill\nhosts:\n" + host_entry(2) + "stages:\n" +
                                  eval_stage("eval", "h3", "", kLongEvalTokens));
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  ASSERT_GT(coordinator, 0);
  Defer cleanup{[&] { end_process(coordinator); }};
  ASSERT_TRUE(wait_decoding("evalkill-1", "eval")) << read_text(work_.file("run.log"));
  ASSERT_EQ(::kill(coordinator, SIGKILL), 0);
  testing::wait_process(coordinator, 30);
  coordinator = -1;
  auto before = stage(status("evalkill-1"), "eval");
  EXPECT_EQ(before["state"], "running") << before.dump(2);

  auto r = ferry({"resume", "evalkill-1"}, kRunTimeoutS);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = stage(status("evalkill-1"), "eval");
  EXPECT_EQ(st["state"], "succeeded") << st.dump(2);
  EXPECT_EQ(st["attempt"], 1) << "a new attempt was started instead of re-attaching";
  auto ev = events("evalkill-1", "eval");
  EXPECT_EQ(count(ev, "attempt.launched"), 1) << dump(ev);
  EXPECT_GE(count(ev, "attempt.reattached"), 1) << dump(ev);
  EXPECT_EQ(job_pids(ev).size(), 1u) << "the eval ran in more than one process: " << dump(ev);
  EXPECT_TRUE(report("evalkill-1", "eval").is_object()) << dump(ev);
  // The log holds the worker's progress once and the report once.
  std::string log = read_text(log_file("evalkill-1", "eval"));
  EXPECT_EQ(log.find("[eval] decoding"), log.rfind("[eval] decoding")) << log;
  EXPECT_NE(log.find("gate: PASSED"), std::string::npos) << log;
}

// A sharded eval over two SSH hosts (issue 31): the prompts split between h1 and h2,
// merged into the report of the same eval run whole in the coordinator. h2's link is
// cut while its shard decodes, for longer than its give_up, so that shard fails and
// the run stops short of the merge; after the link is back, `ferry resume` runs h2's
// shard again and nothing else: h1's shard keeps its one attempt and its report.
TEST_F(SshEvalTest, ShardsOverTwoHostsMergeExactlyAndResumeRedoesOnlyTheCutShard) {
  make_models("h1");  // the hosts share this machine's file system: h2 reads them by path
  const std::string dir = workdir("h1");
  std::string split = eval_stage("split", "", dir, kLongEvalTokens);
  split.insert(split.find("    target:"), "    hosts: [h1, h2]\n");
  std::string wf = write_workflow("name: shards\nhosts:\n" + host_entry(0) + host_entry(1, {{"give_up", "10s"}}) +
                                  "stages:\n" + eval_stage("whole", "", dir, kLongEvalTokens) + split);
  const std::string cut_shard = "split-shard-2-of-2", kept_shard = "split-shard-1-of-2";
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  ASSERT_GT(coordinator, 0);
  Defer end_coordinator{[&] { end_process(coordinator); }};
  LinkCut link(tb_, "h2");
  ASSERT_TRUE(wait_decoding("shards-1", cut_shard)) << read_text(work_.file("run.log"));
  ASSERT_EQ(link.cut(), 0);
  ASSERT_TRUE(wait_until([&] { return stage(status("shards-1"), cut_shard)["state"] == "failed"; }, seconds(120)))
      << stage(status("shards-1"), cut_shard).dump(2);
  EXPECT_EQ(testing::wait_process(coordinator, kRunTimeoutS), 1) << read_text(work_.file("run.log"));
  coordinator = -1;
  ASSERT_EQ(link.restore(), 0);
  auto st = status("shards-1");
  EXPECT_EQ(stage(st, kept_shard)["state"], "succeeded") << stage(st, kept_shard).dump(2);
  EXPECT_NE(stage(st, "split")["state"], "succeeded");

  auto r = ferry({"resume", "shards-1"}, kRunTimeoutS);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  st = status("shards-1");
  EXPECT_EQ(stage(st, "split")["state"], "succeeded") << stage(st, "split").dump(2);
  EXPECT_EQ(stage(st, kept_shard)["attempt"], 1);
  EXPECT_EQ(count(events("shards-1", kept_shard), "eval.started"), 1) << dump(events("shards-1", kept_shard));
  EXPECT_EQ(stage(st, cut_shard)["attempt"], 2);
  EXPECT_EQ(stage(st, cut_shard)["state"], "succeeded");
  auto whole = report("shards-1", "whole"), merged = report("shards-1", "split");
  ASSERT_TRUE(whole.is_object() && merged.is_object());
  ASSERT_EQ(merged["shards"].size(), 2u);
  merged.erase("shards");
  EXPECT_EQ(testing::comparable_report(merged).dump(1), testing::comparable_report(whole).dump(1));
  EXPECT_EQ(merged["candidate"]["responses"], 20);
  EXPECT_EQ(stage(st, "split")["metrics"]["tau"], stage(st, "whole")["metrics"]["tau"]);
  std::printf("shard on h2 failed at the cut and was run again alone; merged tau %s = whole tau %s\n",
              stage(st, "split")["outputs"]["tau"].dump().c_str(), stage(st, "whole")["outputs"]["tau"].dump().c_str());
}

// Over SSH: the worker's check runs on each host under its env. h2's env points
// the loader at a broken libtorch (an empty libtorch_cpu.so.1.13 found first).
TEST_F(SshEvalTest, HostsCheckTellsWhichHostsCanRunEvals) {
  std::string broken = work_.file("broken-libtorch");
  ASSERT_EQ(testing::run_process({"mkdir", "-p", broken}).exit_code, 0);
  testing::write_text(broken + "/libtorch_cpu.so.1.13", "");
  std::string wf = write_workflow("name: caps\nhosts:\n" + host_entry(0) +
                                  host_entry(1, {{"env", "{LD_LIBRARY_PATH: " + broken + "}"}}) +
                                  "stages:\n  a:\n    host: h1\n    run: 'true'\n");
  auto r = ferry({"hosts", "check", wf, "--json"}, kRunTimeoutS);
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  std::map<std::string, nlohmann::json> hosts;
  for (const auto& h : j["hosts"]) hosts[h["name"]] = h;
  EXPECT_EQ(hosts["h1"]["eval"]["can_run"], true) << hosts["h1"].dump(2);
  EXPECT_EQ(hosts["h1"]["eval"].value("libtorch", "").rfind("1.13", 0), 0u) << hosts["h1"].dump(2);
  EXPECT_EQ(hosts["h2"]["eval"]["can_run"], false) << hosts["h2"].dump(2);
  EXPECT_NE(hosts["h2"]["eval"].value("why", "").find("libtorch_cpu.so.1.13"), std::string::npos)
      << hosts["h2"].dump(2);
  auto text = ferry({"hosts", "check", wf}, kRunTimeoutS).out;
  EXPECT_NE(text.find("evals: yes"), std::string::npos) << text;
  EXPECT_NE(text.find("evals: NO"), std::string::npos) << text;
}

}  // namespace
}  // namespace ferry::e2e
