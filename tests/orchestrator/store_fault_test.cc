// The state store fails or is contended (issue 13, review F5 and F9): the real
// `ferry` binary, real local jobs, and a real `sqlite3` process that holds the
// database's write lock the way a person's `sqlite3` shell or a backup would.
//
// - A lock held longer than SQLite's busy timeout is waited out: nothing is
//   killed, every exit is recorded once.
// - A store that stays broken stops the coordinator as a crash would: the jobs
//   keep running and `ferry resume` re-attaches to them.
// - Exactly one coordinator drives a run: a second `resume` is refused even when
//   the recorded PID says nothing (reused, or 0), and `cancel` asks the live one.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"
#include "tests/support/sqlite_lock.h"

namespace ferry {
namespace {

using testing::read_text;
using testing::wait_until;
using testing::write_text;

constexpr auto kEventWait = std::chrono::seconds(30);

class StoreFaultTest : public testing::FerryHomeTest {
 protected:
  std::string db() { return home_.file("ferry.db"); }
  std::string job_dir() { return home_.path() + "/hosts/local/"; }
  /// `long` waits for the file `release` (then exits 3); `tick` for `tick_go`.
  std::string workflow() {
    return write_workflow(
        "name: store\nparams:\n  dir: ''\nstages:\n"
        "  long:\n    run: |\n      echo $$ > long.pid\n"
        "      while [ ! -f ${{ params.dir }}/release ]; do sleep 0.05; done\n      exit 3\n"
        "  tick:\n    run: |\n      echo $$ > tick.pid\n"
        "      while [ ! -f ${{ params.dir }}/tick_go ]; do sleep 0.05; done\n");
  }
  pid_t start_run() {
    pid_t p = testing::spawn_process({testing::bin_dir() + "/ferry", "run", workflow(), "-p", "dir=" + work_.path()},
                                     env_with_extra(), work_.file("run.log"));
    EXPECT_GT(p, 0);
    // The event: both jobs exist on their host.
    EXPECT_TRUE(wait_until(
        [&] { return !read_text(job_dir() + "long.pid").empty() && !read_text(job_dir() + "tick.pid").empty(); },
        kEventWait))
        << read_text(work_.file("run.log"));
    return p;
  }
  /// The database's write lock, held by a sqlite3 process while `hold` (shell) runs.
  pid_t hold_write_lock(const std::string& hold) {
    pid_t p = testing::hold_sqlite_write_lock(db(), hold, work_.file("hold.log"), kEventWait);
    EXPECT_GT(p, 0) << read_text(work_.file("hold.log"));
    return p;
  }
  int count(const std::string& sql) {
    auto r = testing::run_process({"sqlite3", "-cmd", ".timeout 10000", db(), sql});
    return std::atoi(r.out.c_str());
  }
  nlohmann::json stage(const std::string& run, const std::string& name) {
    auto r = ferry({"status", run, "--json"});
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_object()) return nlohmann::json::object();
    for (const auto& s : j["stages"]) {
      if (s["name"] == name) return s;
    }
    return nlohmann::json::object();
  }
  std::map<std::string, std::string> env_with_extra() {
    auto e = env();
    for (const auto& [k, v] : extra_env_) e[k] = v;
    return e;
  }

  std::map<std::string, std::string> extra_env_;
};

TEST_F(StoreFaultTest, ALockHeldLongerThanTheBusyTimeoutIsWaitedOutAndKillsNothing) {
  pid_t coordinator = start_run();
  pid_t long_job = std::stoi(read_text(job_dir() + "long.pid"));
  // 12 s: longer than SQLite's 10 s busy timeout, which used to end in SIGKILL for
  // every job; a fault's length, not a wait for an event.
  pid_t holder = hold_write_lock("sleep 12");
  write_text(work_.file("tick_go"), "");  // tick ends while the lock is held
  EXPECT_EQ(testing::wait_process(holder, 60), 0) << read_text(work_.file("hold.log"));
  EXPECT_TRUE(testing::process_running(long_job)) << "the store's hiccup killed a running job\n"
                                                  << read_text(work_.file("run.log"));
  EXPECT_TRUE(wait_until([&] { return stage("store-1", "tick").value("state", "") == "succeeded"; }, kEventWait))
      << read_text(work_.file("run.log"));
  write_text(work_.file("release"), "");
  EXPECT_EQ(testing::wait_process(coordinator, 60), 1) << read_text(work_.file("run.log"));
  auto l = stage("store-1", "long");
  EXPECT_EQ(l["state"], "failed") << l.dump(2);
  EXPECT_EQ(l["exit_code"], 3) << l.dump(2);
  EXPECT_EQ(count("SELECT count(*) FROM events WHERE type='attempt.finished'"), 2);
  EXPECT_EQ(count("SELECT count(*) FROM attempts"), 2) << "an attempt was started again";
}

TEST_F(StoreFaultTest, AStoreThatStaysBrokenStopsTheCoordinatorAndLeavesTheJobsForResume) {
  extra_env_["FERRY_STORE_PATIENCE_S"] = "1";
  pid_t coordinator = start_run();
  pid_t long_job = std::stoi(read_text(job_dir() + "long.pid"));
  pid_t holder = hold_write_lock("while [ ! -f " + work_.file("unlock") + " ]; do sleep 0.05; done");
  write_text(work_.file("tick_go"), "");
  // The coordinator cannot record tick's end: it stops, and says how to go on.
  int code = testing::wait_process(coordinator, 60);
  std::string log = read_text(work_.file("run.log"));
  EXPECT_NE(code, 0) << log;
  EXPECT_NE(code, 128 + SIGKILL) << log;
  EXPECT_NE(log.find("ferry resume store-1"), std::string::npos) << log;
  EXPECT_TRUE(testing::process_running(long_job)) << "a store failure killed a running job\n" << log;
  write_text(work_.file("unlock"), "");
  EXPECT_EQ(testing::wait_process(holder, 30), 0);

  write_text(work_.file("release"), "");
  auto r = ferry({"resume", "store-1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // long exits 3
  auto l = stage("store-1", "long");
  EXPECT_EQ(l["exit_code"], 3) << l.dump(2);
  EXPECT_EQ(l["attempt"], 1) << "re-attached, not started again";
  auto t = stage("store-1", "tick");
  EXPECT_EQ(t["state"], "succeeded") << t.dump(2);
  EXPECT_EQ(t["attempt"], 1);
  EXPECT_EQ(count("SELECT count(*) FROM events WHERE type='attempt.finished'"), 2);
}

TEST_F(StoreFaultTest, ASecondCoordinatorIsRefusedEvenWhenTheRecordedPidSaysNothing) {
  pid_t coordinator = start_run();
  // What PID reuse or another machine's PID looks like from here: no live pid.
  ASSERT_EQ(
      testing::run_process({"sqlite3", "-cmd", ".timeout 10000", db(), "UPDATE runs SET coordinator_pid=0"}).exit_code,
      0);
  // `status` asks the run's lock, not the PID: the run is still driven.
  auto st = ferry({"status", "store-1", "--json"}, 20);
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_EQ(nlohmann::json::parse(st.out)["coordinator_alive"], true) << st.out;
  auto second = ferry({"resume", "store-1"}, 20);
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  EXPECT_NE(second.err.find("being driven by another coordinator"), std::string::npos) << second.err;
  EXPECT_EQ(count("SELECT count(*) FROM events WHERE type IN ('attempt.started','attempt.reattached')"), 2);
  // `cancel` asks the live coordinator instead of driving the run itself.
  auto c = ferry({"cancel", "store-1"}, 20);
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("asked the coordinator"), std::string::npos) << c.out;
  EXPECT_EQ(testing::wait_process(coordinator, 60), 130) << read_text(work_.file("run.log"));
  EXPECT_EQ(stage("store-1", "long")["state"], "cancelled");
}

TEST_F(StoreFaultTest, ResumeTakesOverOnceTheCoordinatorIsGone) {
  pid_t coordinator = start_run();
  ::kill(coordinator, SIGKILL);
  testing::wait_process(coordinator);
  // A recorded PID that names a live process (reuse) does not make the run look driven.
  ASSERT_EQ(testing::run_process({"sqlite3", "-cmd", ".timeout 10000", db(),
                                  "UPDATE runs SET coordinator_pid=" + std::to_string(::getpid())})
                .exit_code,
            0);
  auto st = ferry({"status", "store-1", "--json"}, 20);
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_EQ(nlohmann::json::parse(st.out)["coordinator_alive"], false) << st.out;
  write_text(work_.file("tick_go"), "");
  write_text(work_.file("release"), "");
  auto r = ferry({"resume", "store-1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(stage("store-1", "long")["exit_code"], 3);
  EXPECT_EQ(stage("store-1", "tick")["state"], "succeeded");
}

}  // namespace
}  // namespace ferry
