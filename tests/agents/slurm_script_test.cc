// The batch script of a Slurm attempt (agents/slurm_job.h), run here with the real
// /bin/sh as Slurm would run it (`sh job.sh ATTEMPT_DIR`), no Slurm needed: a folder
// value never runs as code (review-4 P3), the stage's env cannot move or break the
// exit record (P8), and the command's output stays within log_max through the real
// `ferry-agent cap-log` (P4).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>

#include <nlohmann/json.hpp>

#include "agents/slurm_job.h"
#include "base/capped_log.h"
#include "base/file_util.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::exists;
using testing::read_text;
using testing::TempDir;

class SlurmScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    paths_ = job_paths(dir_.path(), "j", 1);
    ASSERT_TRUE(make_dirs(paths_.attempt_dir).ok());
    spec_.shell = "sh";
    spec_.cwd = dir_.path();
  }
  // Writes the script and runs it with `shell` as Slurm would; its exit code.
  int run(const std::string& shell = "/bin/sh", const std::string& agent = testing::bin_dir() + "/ferry-agent") {
    auto script = slurm_script(paths_, spec_, "a test", agent);
    EXPECT_TRUE(script.ok()) << script.status().message();
    testing::write_text(paths_.job_script(), script.ok() ? *script : "");
    return testing::run_process({shell, paths_.job_script(), paths_.attempt_dir}, {}, 60).exit_code;
  }
  nlohmann::json exit_record() { return nlohmann::json::parse(read_text(paths_.exit()), nullptr, false); }
  int64_t bytes_on_disk() {
    auto r = testing::run_process({"sh", "-c", "cat " + paths_.log() + "* | wc -c"});
    return std::atoll(r.out.c_str());
  }

  TempDir dir_;
  JobPaths paths_;
  LaunchSpec spec_;
};

TEST_F(SlurmScriptTest, ACwdThatCannotBeEnteredRunsNothingItHolds) {
  const std::string mark = dir_.file("MARK");
  // A double quote, $(...), a backquote, a single quote and a backslash escape dash's echo would obey.
  spec_.cwd = dir_.file("gone/x\"$(touch " + mark + ")`touch " + mark + "`'\\c\\n");
  spec_.command = "touch " + mark;
  for (const char* shell : {"/bin/sh", "/bin/bash"}) {
    SCOPED_TRACE(shell);
    ::unlink(paths_.log().c_str());
    EXPECT_EQ(run(shell), 126);
    EXPECT_FALSE(exists(mark));
    EXPECT_EQ(exit_record().value("exit_code", -1), 126) << read_text(paths_.exit());
    EXPECT_NE(read_text(paths_.log()).find("ferry: cannot enter " + spec_.cwd + "\n"), std::string::npos)
        << read_text(paths_.log());
  }
}

TEST_F(SlurmScriptTest, TheStagesEnvMovesNoRecordWhateverItNames) {
  // Names the script once used for itself, and a PATH without mv or date.
  spec_.env = {{"d", dir_.path()}, {"child", "1"}, {"rc", "0"}, {"sig", "9"}, {"PATH", "/nonexistent"}};
  spec_.command = "echo \"d=$d\"; exit 3";
  EXPECT_EQ(run(), 3);
  auto rec = exit_record();
  EXPECT_EQ(rec.value("exit_code", -1), 3) << read_text(paths_.exit());
  EXPECT_EQ(rec.value("signal", -1), 0);
  EXPECT_GT(rec.value("ended_ms", int64_t{0}), 0);
  EXPECT_EQ(read_text(paths_.log()), "d=" + dir_.path() + "\n");
  EXPECT_FALSE(exists(dir_.file("exit.json")));
}

TEST_F(SlurmScriptTest, AnEnvNameTheScriptKeepsForItselfIsRefused) {
  spec_.env = {{"__ferry_d", "/tmp"}};
  auto script = slurm_script(paths_, spec_, "a test", "/bin/true");
  ASSERT_FALSE(script.ok());
  EXPECT_NE(script.status().message().find("'__ferry_d'"), std::string::npos) << script.status().message();
}

TEST_F(SlurmScriptTest, TheLogStaysWithinLogMaxAndTheExitCodeIsKept) {
  spec_.log_max = 64 << 10;
  spec_.command = "head -c 1000000 /dev/zero | tr '\\0' x; echo; echo last line; exit 5";
  EXPECT_EQ(run(), 5);
  EXPECT_EQ(exit_record().value("exit_code", -1), 5) << read_text(paths_.exit());
  EXPECT_LE(bytes_on_disk(), 64 << 10);
  EXPECT_EQ(capped_log_size(paths_.log()), 1000000 + 1 + 10);
  auto tail = capped_log_tail(paths_.log(), 1);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(*tail, "last line\n");
}

TEST_F(SlurmScriptTest, ANodeWithoutTheAgentRunsTheCommandAndSaysTheLogIsNotCapped) {
  spec_.command = "echo hi";
  EXPECT_EQ(run("/bin/sh", dir_.file("no-agent")), 0);
  std::string log = read_text(paths_.log());
  EXPECT_NE(log.find("cannot run on this node: this log is not kept within log_max"), std::string::npos) << log;
  EXPECT_NE(log.find("hi\n"), std::string::npos) << log;
}

// Slurm's TERM (scancel, the time limit) reaches the command through cap-log, and
// its exit is recorded.
TEST_F(SlurmScriptTest, TermReachesTheCommandThroughTheLogCap) {
  spec_.command = "trap 'echo got TERM; exit 7' TERM; echo ready; while :; do sleep 0.05; done";
  auto script = slurm_script(paths_, spec_, "a test", testing::bin_dir() + "/ferry-agent");
  ASSERT_TRUE(script.ok());
  testing::write_text(paths_.job_script(), *script);
  pid_t pid = testing::spawn_process({"/bin/sh", paths_.job_script(), paths_.attempt_dir}, {}, dir_.file("out"));
  ASSERT_TRUE(testing::wait_until([&] { return read_text(paths_.log()).find("ready") != std::string::npos; },
                                  std::chrono::seconds(30)));
  ::kill(pid, SIGTERM);
  EXPECT_EQ(testing::wait_process(pid, 30), 7);
  EXPECT_EQ(exit_record().value("exit_code", -1), 7) << read_text(paths_.exit());
  EXPECT_NE(read_text(paths_.log()).find("got TERM"), std::string::npos) << read_text(paths_.log());
}

}  // namespace
}  // namespace ferry
