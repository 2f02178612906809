// A Slurm login node reached over SSH whose link is cut for 30 s while its job runs
// (issue 27): the one-node Slurm runs inside testbed host h1's network namespace, so
// h1 is the login node; cutting h1 off the coordinator leaves the job, slurmctld and
// slurmd talking on h1's own loopback. The job runs through the cut, ferry re-attaches
// when the link is back, and records the job's exit code once, from one sbatch.
// Cuts a link of the shared testbed: RUN_SERIAL in CMake.
#include <sys/stat.h>

#include <chrono>

#include "tests/e2e_ssh/e2e_ssh_env.h"

namespace ferry::e2e {
namespace {

using std::chrono::seconds;
using std::chrono::steady_clock;

const char kSlurmTestbed[] = FERRY_SOURCE_DIR "/tests/slurm/slurm_testbed.sh";
constexpr auto kCutFor = seconds(30);

class SlurmLinkCutTest : public SshRunTest {
 protected:
  void SetUp() override {
    SshRunTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    h1_ = tb_.hosts[0];
    ASSERT_FALSE(h1_.netns.empty()) << "hosts.json names no netns: an older testbed.sh?";
    const int port = 18000 + 2 * (::getpid() % 1000);
    // nsenter --net, not `ip netns exec`: that remounts /sys for the namespace, without
    // /sys/fs/cgroup, and slurmd will not start without it.
    auto up = testing::run_process(
        {"nsenter", "--net=/var/run/netns/" + h1_.netns, kSlurmTestbed, "up", cluster_.path()},
        {{"SLURMCTLD_PORT", std::to_string(port)}, {"SLURMD_PORT", std::to_string(port + 1)}, {"KILL_WAIT", "2"}}, 60);
    started_ = true;
    if (up.exit_code == 2) GTEST_SKIP() << "SLURM LINK CUT TEST SKIPPED: no Slurm here: " << up.err;
    ASSERT_EQ(up.exit_code, 0) << up.err << read_text(cluster_.file("log/slurmctld.log")).substr(0, 2000);
    // h1's logins find this cluster, and run its clients through shims that count them.
    const std::string shims = work_.file("shims");
    ::mkdir(shims.c_str(), 0755);
    for (const char* tool : {"sbatch", "squeue", "scontrol", "scancel", "sinfo"}) {
      std::string path = shims + "/" + tool;
      testing::write_text(path, "#!/bin/sh\necho \"" + std::string(tool) + " $*\" >> " + calls_file() +
                                    "\nexec /usr/bin/" + tool + " \"$@\"\n");
      ::chmod(path.c_str(), 0755);
    }
    bashrc_ = tb_.state_dir + "/" + h1_.name + "/home/.bashrc";
    had_bashrc_ = testing::exists(bashrc_);
    old_bashrc_ = read_text(bashrc_);
    testing::write_text(bashrc_, old_bashrc_ + "\nexport SLURM_CONF=" + cluster_.file("slurm.conf") +
                                     "\nexport PATH=" + shims + ":$PATH\n");
  }
  void TearDown() override {
    if (!bashrc_.empty()) {
      if (had_bashrc_) testing::write_text(bashrc_, old_bashrc_);
      else ::unlink(bashrc_.c_str());
    }
    if (started_) testing::run_process({kSlurmTestbed, "down", cluster_.path()}, {}, 60);
  }
  std::string calls_file() const { return work_.file("slurm-calls.log"); }
  std::string slurm_state(const std::string& id) {
    auto r = testing::run_process({"ip", "netns", "exec", h1_.netns, "squeue", "-h", "-t", "all", "-j", id, "-o", "%T"},
                                  {{"SLURM_CONF", cluster_.file("slurm.conf")}}, 30);
    while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
    return r.out;
  }

  Host h1_;
  testing::TempDir cluster_;
  bool started_ = false;
  std::string bashrc_, old_bashrc_;
  bool had_bashrc_ = false;
};

TEST_F(SlurmLinkCutTest, ALoginNodeCutForThirtySecondsChangesNothingForItsJob) {
  const std::string release = work_.file("release");
  std::string wf = write_workflow("name: slcut\nhosts:\n" + host_entry(0, {{"scheduler", "slurm"}}) +
                                  "stages:\n  long:\n    host: h1\n    run: |\n      echo started\n"
                                  "      while [ ! -f " +
                                  release +
                                  " ]; do sleep 0.2; done\n"
                                  "      echo finished; exit 6\n");
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  ASSERT_GT(coordinator, 0);
  Defer cleanup{[&] {
    testing::write_text(release, "go");  // the job ends by itself
    end_process(coordinator);
  }};
  LinkCut link(tb_, h1_.name);
  const std::string log = log_file("slcut-1", "long");
  ASSERT_TRUE(wait_until([&] { return read_text(log).find("started\n") != std::string::npos; }, seconds(120)))
      << read_text(work_.file("run.log"));
  std::string id;
  for (const auto& e : events("slcut-1", "long")) {
    auto d = nlohmann::json::parse(e.detail, nullptr, false);
    if (e.type == "attempt.launched" && d.is_object()) id = d.value("slurm_job", std::string());
  }
  ASSERT_FALSE(id.empty()) << dump(events("slcut-1", "long"));
  ASSERT_EQ(slurm_state(id), "RUNNING");

  ASSERT_EQ(link.cut(), 0);
  const auto cut_at = steady_clock::now();
  bool ran_through = true;
  while (steady_clock::now() - cut_at < kCutFor) {
    ran_through = ran_through && slurm_state(id) == "RUNNING";
    wait_until([&] { return steady_clock::now() - cut_at >= kCutFor; }, seconds(1));
  }
  ASSERT_EQ(link.restore(), 0);
  EXPECT_TRUE(ran_through) << "the Slurm job left RUNNING while its login node was cut off";
  testing::write_text(release, "go");

  EXPECT_EQ(testing::wait_process(coordinator, 240), 1) << read_text(work_.file("run.log"));  // exit 6: failed
  auto st = stage(status("slcut-1"), "long");
  EXPECT_EQ(st.value("state", ""), "failed") << st.dump(2);
  EXPECT_EQ(st.value("exit_code", -1), 6) << st.dump(2);
  EXPECT_EQ(st.value("attempt", 0), 1) << "re-attached, not submitted again";
  auto evs = events("slcut-1", "long");
  EXPECT_EQ(count(evs, "attempt.launched"), 1) << dump(evs);
  EXPECT_EQ(count(evs, "attempt.finished"), 1) << dump(evs);
  std::string calls = read_text(calls_file());
  size_t sbatches = 0;
  for (size_t at = 0; (at = calls.find("sbatch ", at)) != std::string::npos; ++at)
    sbatches += at == 0 || calls[at - 1] == '\n';
  EXPECT_EQ(sbatches, 1u) << calls;
  EXPECT_EQ(read_text(log), "started\nfinished\n");
}

}  // namespace
}  // namespace ferry::e2e
