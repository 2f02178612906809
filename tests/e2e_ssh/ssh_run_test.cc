// End to end over SSH (issue 3): the real `ferry` binary runs workflows on the
// testbed's hosts through real sshd, uploads and starts the real ferry-agent, and
// records everything in a real SQLite file. Covers: a three-host run with a
// dependency and an output crossing hosts; a SIGKILLed coordinator and `ferry
// resume` re-attaching to the SSH job; host-key and authentication refusals as
// stage errors; `ferry hosts check`. The link cut lives in ssh_link_cut_run_test.cc.
#include <signal.h>

#include <chrono>

#include "tests/e2e_ssh/e2e_ssh_env.h"

namespace ferry::e2e {
namespace {

using std::chrono::seconds;

// Cold runs upload the agent (a few MiB) and every ssh exec starts a login shell
// (1-2 s here), so a first connection takes several seconds.
constexpr int kRunTimeoutS = 180;
constexpr auto kJobStartDeadline = seconds(90);

TEST_F(SshRunTest, ThreeHostsRunStagesPassOutputsAndKeepLogs) {
  // produce (h1) -> consume (h2) -> report (h3), and odd (h3) on its own, exiting 7.
  // Every script prints `hostname -I`: the proof of where it ran.
  std::string wf = write_workflow("name: three\nhosts:\n" + host_entry(0) + host_entry(1) + host_entry(2) + R"wf(stages:
  produce:
    host: h1
    run: |
      echo "produce on $(hostname -I)"
      echo made > produced.txt
      echo "token=tok-$(hostname -I | tr -d ' ')" >> "$FERRY_OUTPUT"
    outputs: [token]
  consume:
    host: h2
    needs: produce
    run: |
      echo consume on $(hostname -I) got ${{ stages.produce.outputs.token }}
      echo seen=${{ stages.produce.outputs.token }}@$(hostname -I | tr -d ' ') >> "$FERRY_OUTPUT"
    outputs: [seen]
  report:
    host: h3
    needs: consume
    run: |
      echo report on $(hostname -I): ${{ stages.consume.outputs.seen }}
      printf '%s' ${{ stages.consume.outputs.seen }} > report.txt
  odd:
    host: h3
    run: echo "odd on $(hostname -I)"; echo to-stderr >&2; exit 7
)wf");
  auto r = ferry({"run", wf}, kRunTimeoutS);
  EXPECT_EQ(r.exit_code, 1) << "odd exits 7, so the run fails\n" << r.out << r.err;

  auto st = status("three-1");
  EXPECT_EQ(st["state"], "failed") << st.dump(2);
  const std::string a1 = tb_.hosts[0].address, a2 = tb_.hosts[1].address, a3 = tb_.hosts[2].address;
  auto produce = stage(st, "produce"), consume = stage(st, "consume"), report = stage(st, "report"),
       odd = stage(st, "odd");
  for (const auto* s : {&produce, &consume, &report}) {
    EXPECT_EQ((*s)["state"], "succeeded") << s->dump(2);
    EXPECT_EQ((*s)["exit_code"], 0) << s->dump(2);
    EXPECT_EQ((*s)["attempt"], 1) << s->dump(2);
  }
  EXPECT_EQ(produce["host"], "h1");
  EXPECT_EQ(consume["host"], "h2");
  EXPECT_EQ(report["host"], "h3");
  EXPECT_EQ(odd["state"], "failed") << odd.dump(2);
  EXPECT_EQ(odd["exit_code"], 7) << odd.dump(2);
  // Outputs recorded, and the one crossing h1 -> h2 arrived intact.
  EXPECT_EQ(produce["outputs"]["token"], "tok-" + a1) << produce.dump(2);
  EXPECT_EQ(consume["outputs"]["seen"], "tok-" + a1 + "@" + a2) << consume.dump(2);
  // Files land in each host's own workdir.
  EXPECT_EQ(read_text(workdir("h1") + "/produced.txt"), "made\n");
  EXPECT_EQ(read_text(workdir("h3") + "/report.txt"), "tok-" + a1 + "@" + a2);

  // Logs come back through `ferry logs`, stdout and stderr alike.
  auto lp = ferry({"logs", "three-1", "produce"});
  EXPECT_EQ(lp.exit_code, 0) << lp.err;
  EXPECT_NE(lp.out.find("produce on " + a1), std::string::npos) << lp.out;
  auto lc = ferry({"logs", "three-1", "consume"});
  EXPECT_NE(lc.out.find("consume on " + a2 + " got tok-" + a1), std::string::npos) << lc.out;
  auto lr = ferry({"logs", "three-1", "report"});
  EXPECT_NE(lr.out.find("report on " + a3), std::string::npos) << lr.out;
  auto lo = ferry({"logs", "three-1", "odd"});
  EXPECT_NE(lo.out.find("odd on " + a3), std::string::npos) << lo.out;
  EXPECT_NE(lo.out.find("to-stderr"), std::string::npos) << lo.out;

  // One launch and one end per stage.
  for (const char* s : {"produce", "consume", "report", "odd"}) {
    auto ev = events("three-1", s);
    EXPECT_EQ(count(ev, "attempt.launched"), 1) << s << "\n" << dump(ev);
    EXPECT_EQ(count(ev, "attempt.finished"), 1) << s << "\n" << dump(ev);
  }
}

TEST_F(SshRunTest, ResumeAfterSigkillReattachesToTheSshJob) {
  const std::string release = work_.file("release");
  const std::string dir = workdir("h2");
  std::string wf = write_workflow("name: crash\nparams:\n  release: \"\"\nhosts:\n" + host_entry(1) + R"wf(stages:
  long:
    host: h2
    run: |
      echo start >> starts.txt
      echo $$ > long.pid
      echo started
      while [ ! -f ${{ params.release }} ]; do sleep 0.1; done
      echo finished
      exit 6
)wf");
  pid_t coordinator = spawn_ferry({"run", wf, "-p", "release=" + release}, "run.log");
  ASSERT_GT(coordinator, 0);
  pid_t resumer = -1;
  Defer cleanup{[&] {
    end_process(coordinator);
    end_process(resumer);
    end_job(dir + "/long.pid");
  }};
  // The event: the job has printed its first line and the coordinator holds it.
  ASSERT_TRUE(wait_until([&] { return read_text(log_file("crash-1", "long")).find("started\n") != std::string::npos; },
                         kJobStartDeadline))
      << read_text(work_.file("run.log"));
  ASSERT_TRUE(exists(dir + "/long.pid"));
  pid_t job = std::atoi(read_text(dir + "/long.pid").c_str());
  ::kill(coordinator, SIGKILL);
  EXPECT_EQ(testing::wait_process(coordinator, 30), 128 + SIGKILL);
  coordinator = -1;  // reaped
  EXPECT_TRUE(testing::process_running(job)) << "the SSH job died with its coordinator";
  auto mid = status("crash-1");
  EXPECT_EQ(mid["state"], "running");
  EXPECT_EQ(mid["coordinator_alive"], false);

  // Resume while the job still runs: it must re-attach, not start it again.
  resumer = spawn_ferry({"resume", "crash-1"}, "resume.log");
  ASSERT_GT(resumer, 0);
  ASSERT_TRUE(
      wait_until([&] { return count(events("crash-1", "long"), "attempt.reattached") >= 1; }, kJobStartDeadline))
      << read_text(work_.file("resume.log")) << dump(events("crash-1"));
  EXPECT_TRUE(testing::process_running(job)) << "re-attaching must not end the job";
  write_text(release, "go");
  EXPECT_EQ(testing::wait_process(resumer, kRunTimeoutS), 1)  // exit 6: the run fails, with the real code
      << read_text(work_.file("resume.log"));
  resumer = -1;

  auto st = stage(status("crash-1"), "long");
  EXPECT_EQ(st["state"], "failed") << st.dump(2);
  EXPECT_EQ(st["exit_code"], 6) << st.dump(2);
  EXPECT_EQ(st["attempt"], 1) << "re-attached, not restarted\n" << st.dump(2);
  EXPECT_EQ(read_text(dir + "/starts.txt"), "start\n") << "the job was started again";
  auto ev = events("crash-1", "long");
  EXPECT_EQ(count(ev, "attempt.launched"), 1) << dump(ev);
  EXPECT_EQ(count(ev, "attempt.reattached"), 1) << dump(ev);
  EXPECT_EQ(count(ev, "attempt.finished"), 1) << dump(ev);
  EXPECT_EQ(ferry({"logs", "crash-1", "long"}).out, "started\nfinished\n");
  EXPECT_TRUE(wait_until([&] { return !testing::process_running(job); }, seconds(10)));
}

// Issue 18: two state databases (two people, or one that started over) count the
// same run id; on one SSH host account their jobs must not meet.
TEST_F(SshRunTest, TwoStateDatabasesShareAnSshHostAndBothSucceed) {
  std::string wf = write_workflow("name: same\nhosts:\n" + host_entry(0) + R"wf(stages:
  s:
    host: h1
    run: echo $FERRY_RUN_ID >> runs.txt
)wf");
  testing::TempDir other_home;
  auto first = ferry({"run", wf}, kRunTimeoutS);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  auto second = testing::run_process({testing::bin_dir() + "/ferry", "run", wf},
                                     {{"FERRY_HOME", other_home.path()}, {"NO_COLOR", "1"}}, kRunTimeoutS);
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  auto other = testing::run_process({testing::bin_dir() + "/ferry", "status", "same-1", "--json"},
                                    {{"FERRY_HOME", other_home.path()}});
  std::string job_a = stage(status("same-1"), "s")["job"];
  std::string job_b = stage(nlohmann::json::parse(other.out, nullptr, false), "s")["job"];
  EXPECT_NE(job_a, job_b);
  EXPECT_TRUE(exists(workdir("h1") + "/.ferry/jobs/" + job_a + "/1/spec.json"));
  EXPECT_TRUE(exists(workdir("h1") + "/.ferry/jobs/" + job_b + "/1/spec.json"));
  EXPECT_EQ(read_text(workdir("h1") + "/runs.txt"), "same-1\nsame-1\n");
}

// Waits until host `i`'s sshd log, after `offset`, has logged the end of a
// connection, and returns that part.
std::string sshd_slice_after(const Host& h, size_t offset) {
  std::string slice;
  wait_until(
      [&] {
        std::string all = read_text(h.sshd_log);
        slice = all.size() > offset ? all.substr(offset) : "";
        return slice.find("Connection closed by") != std::string::npos ||
               slice.find("Disconnected from") != std::string::npos ||
               slice.find("Connection reset by") != std::string::npos;
      },
      seconds(15));
  return slice;
}

TEST_F(SshRunTest, UnknownHostKeyAndWrongIdentityFailTheStageClearly) {
  // h1: an empty known_hosts (its key is unknown). h3: a key sshd does not know.
  const std::string empty_known = work_.file("known_hosts_empty");
  write_text(empty_known, "");
  const std::string wrong_key = work_.file("wrong_key");
  ASSERT_EQ(std::system(("ssh-keygen -q -t ed25519 -N '' -f '" + wrong_key + "' </dev/null >/dev/null").c_str()), 0);
  // give_up bounds the test if a refusal were (wrongly) retried like a dropped link.
  std::string wf =
      write_workflow("name: refused\nhosts:\n" + host_entry(0, {{"known_hosts", empty_known}, {"give_up", "20s"}}) +
                     host_entry(2, {{"identity", wrong_key}, {"give_up", "20s"}}) + R"wf(stages:
  keyed:
    host: h1
    run: echo should-not-run > ran.txt
  authed:
    host: h3
    run: echo should-not-run > ran.txt
)wf");
  const Host& h1 = tb_.hosts[0];
  size_t offset = testing::read_text(h1.sshd_log).size();
  auto t0 = std::chrono::steady_clock::now();
  auto r = ferry({"run", wf}, kRunTimeoutS);
  auto took = std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;

  auto st = status("refused-1");
  auto keyed = stage(st, "keyed"), authed = stage(st, "authed");
  EXPECT_EQ(keyed["state"], "failed") << keyed.dump(2);
  EXPECT_EQ(authed["state"], "failed") << authed.dump(2);
  std::string key_error = keyed.value("error", std::string());
  std::string auth_error = authed.value("error", std::string());
  EXPECT_NE(key_error.find("unknown host key"), std::string::npos) << key_error;
  EXPECT_NE(key_error.find("SHA256:"), std::string::npos) << "the fingerprint, to compare: " << key_error;
  EXPECT_NE(key_error.find(h1.address), std::string::npos) << key_error;
  EXPECT_NE(auth_error.find("authentication failed for root@" + tb_.hosts[2].address), std::string::npos) << auth_error;
  EXPECT_NE(auth_error.find(wrong_key), std::string::npos) << "names the key it tried: " << auth_error;
  EXPECT_LT(took, 15) << "a refused host key or key is final: it must not be retried until give_up";
  EXPECT_FALSE(exists(workdir("h1") + "/ran.txt"));
  EXPECT_FALSE(exists(workdir("h3") + "/ran.txt"));
  EXPECT_EQ(read_text(empty_known), "") << "an unknown key must not be recorded without trust: first-use";

  // No credential went to a host whose key was not verified: sshd saw the
  // connection(s) and their end, and no userauth request in between.
  std::string log = sshd_slice_after(h1, offset);
  EXPECT_NE(log.find("Connection from " + h1.coordinator_address), std::string::npos) << log;
  EXPECT_EQ(log.find("userauth-request"), std::string::npos) << log;
  EXPECT_EQ(log.find("Accepted"), std::string::npos) << log;
}

TEST_F(SshRunTest, HostsCheckReportsAgentsAndTheReachabilityMatrix) {
  auto help = ferry({"hosts", "check", "--help"}, 30);
  if (help.exit_code != 0 || help.out.find("hosts check") == std::string::npos) {
    GTEST_SKIP() << "`ferry hosts check` is not in this build: " << help.out << help.err;
  }
  std::string wf = write_workflow("name: check\nhosts:\n" + host_entry(0) + host_entry(1) +
                                  "stages:\n  a:\n    host: h1\n    run: 'true'\n");
  auto r = ferry({"hosts", "check", wf, "--json"}, kRunTimeoutS);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out << r.err;
  ASSERT_TRUE(j.contains("hosts") && j["hosts"].is_array()) << j.dump(2);
  ASSERT_EQ(j["hosts"].size(), 2u) << j.dump(2);
  for (const auto& h : j["hosts"]) {
    EXPECT_EQ(h.value("connected", false), true) << h.dump(2);
    EXPECT_EQ(h.value("reaches_coordinator", false), true) << h.dump(2);
    ASSERT_TRUE(h.contains("agent") && h["agent"].is_object()) << h.dump(2);
    EXPECT_FALSE(h["agent"].value("version", std::string()).empty()) << h.dump(2);
  }
  // The testbed's hosts reach the coordinator but not each other.
  std::map<std::string, nlohmann::json> reach;
  for (const auto& row : j["reach"]) reach[row.value("from", "") + "->" + row.value("to", "")] = row["reachable"];
  ASSERT_TRUE(reach.count("h1->h2") && reach.count("h2->h1")) << j.dump(2);
  EXPECT_EQ(reach["h1->h2"], false) << j.dump(2);
  EXPECT_EQ(reach["h2->h1"], false) << j.dump(2);
}

// Review F15: whoever can write a host's .ferry/bin can replace the agent that
// every later run executes as the user. `hosts check` and a run refuse to start
// it there, naming the folder, and nothing of the stage runs.
TEST_F(SshRunTest, AnAgentFolderOthersCanWriteIsRefusedByName) {
  const std::string bin = workdir("h1") + "/.ferry/bin";
  ASSERT_EQ(std::system(("mkdir -p '" + bin + "' && chmod 0777 '" + bin + "'").c_str()), 0);
  std::string wf = write_workflow("name: shared\nhosts:\n" + host_entry(0, {{"give_up", "20s"}}) +
                                  "stages:\n  a:\n    host: h1\n    run: echo should-not-run > ran.txt\n");
  auto check = ferry({"hosts", "check", wf, "--json"}, kRunTimeoutS);
  EXPECT_NE(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("refusing to run the agent from " + bin), std::string::npos) << check.out << check.err;

  auto t0 = std::chrono::steady_clock::now();
  auto r = ferry({"run", wf}, kRunTimeoutS);
  auto took = std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto a = stage(status("shared-1"), "a");
  EXPECT_EQ(a["state"], "failed") << a.dump(2);
  std::string error = a.value("error", std::string());
  EXPECT_NE(error.find(bin + " (mode drwxrwxrwx"), std::string::npos) << error;
  EXPECT_NE(error.find("chmod go-w"), std::string::npos) << "says how to fix it: " << error;
  EXPECT_LT(took, 15) << "an unsafe folder is final: it must not be retried until give_up";
  EXPECT_FALSE(exists(workdir("h1") + "/ran.txt"));
  EXPECT_EQ(std::system(("[ -z \"$(ls -A '" + bin + "')\" ]").c_str()), 0) << "nothing was uploaded into " << bin;
}

}  // namespace
}  // namespace ferry::e2e
