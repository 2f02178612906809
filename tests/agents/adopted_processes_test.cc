// adopted_processes: a process that calls setsid() and loses its parent is adopted
// by the supervisor (the subreaper), seen among its children, and killed with what
// it leaves behind; the job's own exit status is reaped apart from the others. Real
// processes: a forked "supervisor" runs the steps and says by its exit code which
// one failed; this process checks from outside that the escapee is gone.
#include "agents/adopted_processes.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::read_text;
using testing::TempDir;

// Exit codes of the forked supervisor: which step failed.
enum Step { kOk = 0, kNoSubreaper = 10, kNoPidFile, kStillInGroup, kNotAdopted, kStillThere };

// Runs in the forked supervisor: a shell leaves a sleep in a session of its own
// (and, below it, a child of that sleep's shell) and exits, orphaning them.
int supervise_an_escape(const std::string& pidfile) {
  if (!adopt_orphans()) return kNoSubreaper;
  const std::string cmd = "setsid sh -c 'sleep 300 & echo $$ > " + pidfile + "; wait' &";
  if (std::system(cmd.c_str()) != 0) return kNoPidFile;
  pid_t escaped = 0;
  testing::wait_until([&] { return (escaped = std::atoi(read_text(pidfile).c_str())) > 0; }, std::chrono::seconds(10));
  if (escaped <= 0) return kNoPidFile;
  if (::getpgid(escaped) == ::getpgid(0)) return kStillInGroup;
  bool adopted = testing::wait_until(
      [&] {
        auto kids = children_of(::getpid());
        return std::find(kids.begin(), kids.end(), escaped) != kids.end();
      },
      std::chrono::seconds(10));
  if (!adopted) return kNotAdopted;
  kill_adopted(5000);
  return children_of(::getpid()).empty() ? kOk : kStillThere;
}

TEST(AdoptedProcessesTest, AnEscapeeIsAdoptedAndKilledWithWhatItStarted) {
  TempDir dir;
  const std::string pidfile = dir.file("escaped.pid");
  pid_t supervisor = ::fork();
  ASSERT_GE(supervisor, 0);
  if (supervisor == 0) _exit(supervise_an_escape(pidfile));
  int status = 0;
  ASSERT_EQ(::waitpid(supervisor, &status, 0), supervisor);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kOk) << "the step that failed: see enum Step";
  const pid_t escaped = std::atoi(read_text(pidfile).c_str());
  ASSERT_GT(escaped, 1);
  EXPECT_FALSE(testing::process_running(escaped)) << "the escapee " << escaped << " outlived kill_adopted";
}

TEST(AdoptedProcessesTest, TheJobsStatusIsReapedApartFromTheOthers) {
  pid_t other = ::fork();
  ASSERT_GE(other, 0);
  if (other == 0) _exit(3);
  pid_t job = ::fork();
  ASSERT_GE(job, 0);
  if (job == 0) _exit(7);
  int status = -1;
  ASSERT_TRUE(testing::wait_until([&] { return reap_children(job, &status); }, std::chrono::seconds(10)));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_TRUE(testing::wait_until([&] { return ::waitpid(other, nullptr, WNOHANG) < 0; }, std::chrono::seconds(10)))
      << "the other child was reaped too";
}

}  // namespace
}  // namespace ferry
