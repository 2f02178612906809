// End to end over SSH (issue 3, docs/DESIGN.md §9): a host's link is cut for 30 s in
// the middle of a 60 s command stage. The job keeps running on the host, the
// coordinator shows the stage disconnected, re-attaches when the link is back,
// and records the job's real exit code once, with every log line once, in order.
// Cuts a link of the shared testbed: RUN_SERIAL in CMake.
#include <signal.h>

#include <chrono>
#include <sstream>

#include "tests/e2e_ssh/e2e_ssh_env.h"

namespace ferry::e2e {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

constexpr auto kCutFor = seconds(30);              // the point of the test: a long, timed outage
constexpr auto kFirstLinesDeadline = seconds(90);  // cold start: agent upload over ssh
constexpr int kStatusEveryMs = 500;                // how often the cut is observed
constexpr int kRunTimeoutS = 240;                  // the job's 60 s + the cut's aftermath

TEST_F(SshRunTest, LinkCutDuringACommandStageReattachesAndRecordsTheExitOnce) {
  const Host& h = tb_.hosts[1];  // h2
  const std::string dir = workdir(h.name);
  std::string wf = write_workflow("name: cut\nhosts:\n" + host_entry(1) + R"wf(stages:
  long:
    host: h2
    run: |
      echo $$ > long.pid
      echo start >> starts.txt
      for i in $(seq 1 120); do echo line $i; sleep 0.5; done
      exit 5
)wf");
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  ASSERT_GT(coordinator, 0);
  Defer cleanup{[&] {
    end_process(coordinator);
    end_job(dir + "/long.pid");
  }};
  LinkCut link(tb_, h.name);

  // The event: some lines have made it to the coordinator's copy of the log.
  const std::string log = log_file("cut-1", "long");
  ASSERT_TRUE(wait_until([&] { return read_text(log).find("line 3\n") != std::string::npos; }, kFirstLinesDeadline))
      << read_text(work_.file("run.log"));
  ASSERT_TRUE(testing::exists(dir + "/long.pid"));
  pid_t job = std::atoi(read_text(dir + "/long.pid").c_str());
  ASSERT_TRUE(testing::process_running(job));

  ASSERT_EQ(link.cut(), 0);
  auto cut_at = steady_clock::now();
  // Through the whole cut: the job lives on, and `ferry status` comes to show
  // the stage running but disconnected.
  bool seen_disconnected = false, job_survived = true;
  nlohmann::json during;
  while (steady_clock::now() - cut_at < kCutFor) {
    auto s = stage(status("cut-1"), "long");
    if (s.value("state", "") == "running" && s.value("disconnected_since_ms", int64_t{0}) > 0) {
      seen_disconnected = true;
      during = s;
    }
    job_survived = job_survived && testing::process_running(job);
    wait_until([&] { return steady_clock::now() - cut_at >= kCutFor; }, milliseconds(kStatusEveryMs));
  }
  size_t log_bytes_at_restore = read_text(log).size();
  ASSERT_EQ(link.restore(), 0);
  EXPECT_TRUE(job_survived) << "the job died while its host was cut off";
  EXPECT_TRUE(seen_disconnected) << "`ferry status --json` never showed the stage disconnected during a "
                                 << kCutFor.count() << " s cut";
  EXPECT_GT(during.value("disconnected_since_ms", int64_t{0}), 0) << during.dump(2);

  EXPECT_EQ(testing::wait_process(coordinator, kRunTimeoutS), 1)  // exit 5: the run fails
      << read_text(work_.file("run.log"));
  coordinator = -1;

  auto st = stage(status("cut-1"), "long");
  EXPECT_EQ(st["state"], "failed") << st.dump(2);
  EXPECT_EQ(st["exit_code"], 5) << st.dump(2);
  EXPECT_EQ(st["attempt"], 1) << st.dump(2);
  EXPECT_EQ(st["disconnected_since_ms"], 0) << st.dump(2);
  EXPECT_EQ(read_text(dir + "/starts.txt"), "start\n") << "the job was started again";

  auto ev = events("cut-1", "long");
  EXPECT_EQ(count(ev, "attempt.launched"), 1) << dump(ev);
  EXPECT_EQ(count(ev, "attempt.finished"), 1) << dump(ev);
  // host.disconnected, then the link back (reconnected or re-attached).
  size_t first_disc = ev.size();
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].type == "host.disconnected") {
      first_disc = i;
      break;
    }
  }
  ASSERT_LT(first_disc, ev.size()) << dump(ev);
  bool back = false;
  for (size_t i = first_disc + 1; i < ev.size(); ++i) {
    back = back || ev[i].type == "host.reconnected" || ev[i].type == "attempt.reattached";
  }
  EXPECT_TRUE(back) << dump(ev);

  // Every line once, in order, nothing else, whatever the drop did to the stream.
  auto logs = ferry({"logs", "cut-1", "long"});
  EXPECT_EQ(logs.exit_code, 0) << logs.err;
  std::ostringstream want;
  for (int i = 1; i <= 120; ++i) want << "line " << i << "\n";
  EXPECT_EQ(logs.out, want.str());
  EXPECT_LT(log_bytes_at_restore, want.str().size()) << "the log was complete before the link came back: no test";
  EXPECT_TRUE(wait_until([&] { return !testing::process_running(job); }, seconds(10)));
}

}  // namespace
}  // namespace ferry::e2e
