// End to end over SSH with a login shell that is not sh (issue 42, review-4 F23):
// sshd hands every remote command to the user's login shell, and ferry's probe,
// agent upload and lanes are POSIX sh text. A testbed user whose shell is tcsh
// runs a two-stage workflow on h1 through the real `ferry`, sshd and agent. Being
// an ordinary user, its jobs get no cgroup (review-4 F6): their supervisor adopts
// what leaves the job's process group, and a timeout kills that too.
//
// The user (kUser, shell /usr/bin/tcsh, no password, no home of its own: sshd sets
// HOME to the host's home) is made here with useradd and removed after the test;
// its workdir is a folder of its own under /tmp. Root and tcsh needed
// (scripts/install-deps.sh installs tcsh).
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "tests/e2e_ssh/e2e_ssh_env.h"

namespace ferry::e2e {
namespace {

constexpr char kUser[] = "ferrytcsh";
constexpr char kTcsh[] = "/usr/bin/tcsh";
constexpr int kRunTimeoutS = 180;

class LoginShellTest : public SshRunTest {
 protected:
  void SetUp() override {
    SshRunTest::SetUp();
    if (IsSkipped()) return;
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (useradd)";
    ASSERT_EQ(::access(kTcsh, X_OK), 0) << kTcsh << " is missing: run scripts/install-deps.sh";
    // A user left by an interrupted run is reused.
    if (::getpwnam(kUser) == nullptr) {
      auto r = testing::run_process({"useradd", "-M", "-N", "-d", "/nonexistent", "-s", kTcsh, kUser}, {}, 30);
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    // sshd (UsePAM no) refuses an account whose password is locked ("!"); "*" only
    // means no password login.
    auto r = testing::run_process({"usermod", "-s", kTcsh, "-p", "*", kUser}, {}, 30);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    struct passwd* pw = ::getpwnam(kUser);
    ASSERT_NE(pw, nullptr);
    uid_ = pw->pw_uid;
    char tmpl[] = "/tmp/ferry-tcsh-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    workdir_ = tmpl;
    ASSERT_EQ(::chown(workdir_.c_str(), uid_, pw->pw_gid), 0);
  }

  void TearDown() override {
    if (!workdir_.empty()) testing::run_process({"rm", "-rf", "--", workdir_}, {}, 60);
    // Fails while an agent of the user still exits; the next run reuses the user.
    if (uid_ != 0) testing::run_process({"userdel", kUser}, {}, 30);
  }

  uid_t uid_ = 0;
  std::string workdir_;
};

TEST_F(LoginShellTest, AUserWhoseLoginShellIsTcshRunsAWorkflow) {
  std::string wf = write_workflow("name: tcsh\nhosts:\n" + host_entry(0, {{"user", kUser}, {"workdir", workdir_}}) +
                                  R"wf(stages:
  who:
    host: h1
    run: |
      echo "user=$(id -un)" >> "$FERRY_OUTPUT"
      echo "shell=$(getent passwd "$(id -un)" | cut -d: -f7)" >> "$FERRY_OUTPUT"
      echo made > made.txt
    outputs: [user, shell]
  again:
    host: h1
    needs: who
    run: echo again as ${{ stages.who.outputs.user }} > again.txt
)wf");
  auto r = ferry({"run", wf}, kRunTimeoutS);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = status("tcsh-1");
  EXPECT_EQ(st["state"], "succeeded") << st.dump(2);
  auto who = stage(st, "who");
  EXPECT_EQ(who["outputs"]["user"], kUser) << who.dump(2);
  EXPECT_EQ(who["outputs"]["shell"], kTcsh) << "the stage ran as a user whose login shell is tcsh\n" << who.dump(2);
  EXPECT_EQ(testing::read_text(workdir_ + "/made.txt"), "made\n");
  EXPECT_EQ(testing::read_text(workdir_ + "/again.txt"), std::string("again as ") + kUser + "\n");

  // Review-4 F6: this user's agent runs in sshd's cgroup, which it cannot write, so
  // the attempt has no cgroup of its own; its supervisor adopts what escapes the
  // group instead, and `ferry status` has no "not contained" to say.
  std::string launched;
  for (const auto& e : events("tcsh-1", "who")) {
    if (e.type == "attempt.launched") launched = e.detail;
  }
  EXPECT_NE(launched.find("\"contained_by\":\"supervisor\""), std::string::npos) << launched;
  EXPECT_NE(launched.find("\"containment_note\":"), std::string::npos) << "why no cgroup\n" << launched;
  EXPECT_FALSE(who["progress"].contains("uncontained")) << who.dump(2);
  auto text = ferry({"status", "tcsh-1"});
  EXPECT_EQ(text.out.find("not contained"), std::string::npos) << text.out;
}

// The same ordinary user's stage leaves a process in a session of its own and
// times out: the process goes with the stage, though no cgroup held it.
TEST_F(LoginShellTest, ATimedOutStageOfAnOrdinaryUserLeavesNoSetsidChildBehind) {
  std::string wf = write_workflow("name: escape\nhosts:\n" + host_entry(0, {{"user", kUser}, {"workdir", workdir_}}) +
                                  R"wf(stages:
  escape:
    host: h1
    run: |
      setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' &
      exec sleep 300
    timeout: 3s
)wf");
  auto r = ferry({"run", wf}, kRunTimeoutS);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(stage(status("escape-1"), "escape")["state"], "timed_out") << r.out;
  const pid_t escaped = std::atoi(testing::read_text(workdir_ + "/escaped.pid").c_str());
  ASSERT_GT(escaped, 1) << "the stage never started its escapee";
  EXPECT_FALSE(testing::process_running(escaped)) << "pid " << escaped << " outlived the stage's timeout";
}

}  // namespace
}  // namespace ferry::e2e
