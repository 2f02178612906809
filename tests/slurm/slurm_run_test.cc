// Stages on a `scheduler: slurm` host, end to end: the real `ferry` and agent
// (transport local: this machine is the login node) against a real one-node Slurm
// that each test starts (tests/slurm/slurm_testbed.sh) and stops by pid. Every
// Slurm command the agent runs goes through a shim that logs it, so the tests can
// count submissions and polls.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "tests/support/ferry_home_test.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::exists;
using testing::read_text;
using testing::wait_until;
using testing::write_text;

const char kTestbed[] = FERRY_SOURCE_DIR "/tests/slurm/slurm_testbed.sh";

class SlurmRunTest : public testing::FerryHomeTest {
 protected:
  // `ferry` runs with the cluster's slurm.conf and the logging shims first on PATH.
  SlurmRunTest() : FerryHomeTest(240) {
    const char* path = ::getenv("PATH");
    ferry = ferry.with_env({{"SLURM_CONF", cluster_.file("slurm.conf")},
                            {"PATH", shims_ + ":" + std::string(path ? path : "/usr/bin:/bin")}});
  }
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "SLURM TESTS SKIPPED: they need root (slurmd, munged)";
    // Ports of our own, so runs in other build trees never meet this cluster.
    int port = 17000 + 2 * (::getpid() % 2000);
    std::map<std::string, std::string> env = {
        {"SLURMCTLD_PORT", std::to_string(port)}, {"SLURMD_PORT", std::to_string(port + 1)}, {"KILL_WAIT", "2"}};
    auto up = testing::run_process({kTestbed, "up", cluster_.path()}, env, 60);
    started_ = true;
    if (up.exit_code != 0) {
      GTEST_SKIP() << "SLURM TESTS SKIPPED: the one-node Slurm did not start (" << up.exit_code << "): " << up.err
                   << read_text(cluster_.file("log/slurmctld.log")).substr(0, 2000);
    }
    ::mkdir(shims_.c_str(), 0755);
    for (const char* tool : {"sbatch", "squeue", "scontrol", "scancel", "sinfo"}) {
      std::string path = shims_ + "/" + tool;
      write_text(path, "#!/bin/sh\necho \"" + std::string(tool) + " $*\" >> " + calls_file() + "\nexec /usr/bin/" +
                           tool + " \"$@\"\n");
      ::chmod(path.c_str(), 0755);
    }
  }
  void TearDown() override {
    if (started_) testing::run_process({kTestbed, "down", cluster_.path()}, {}, 60);
  }

  std::string calls_file() const { return work_.path() + "/slurm-calls.log"; }
  // Puts `body` in tool's shim, after the line that logs the call; `exec /usr/bin/TOOL "$@"` runs the real one.
  void shim(const std::string& tool, const std::string& body) {
    std::string path = shims_ + "/" + tool;
    write_text(path, "#!/bin/sh\necho \"" + tool + " $*\" >> " + calls_file() + "\n" + body);
    ::chmod(path.c_str(), 0755);
  }
  // A job of another user (nobody), held so that it never runs, named `name`; its id.
  std::string foreign_job(const std::string& name) {
    auto r = testing::run_process({"/usr/bin/sbatch", "--parsable", "--uid=65534", "--hold", "--job-name=" + name,
                                   "--output=/dev/null", "--chdir=/tmp", "--wrap", "sleep 300"},
                                  {{"SLURM_CONF", cluster_.file("slurm.conf")}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
    return r.out;
  }
  // Sum of the sizes of the files matching a shell glob.
  int64_t bytes_in(const std::string& glob) {
    return std::atoll(testing::run_process({"sh", "-c", "cat " + glob + " | wc -c"}).out.c_str());
  }
  int calls(const std::string& tool) const {
    std::string log = read_text(calls_file());
    int n = 0;
    for (size_t at = 0; (at = log.find(tool + " ", at)) != std::string::npos; at += tool.size()) {
      if (at == 0 || log[at - 1] == '\n') ++n;
    }
    return n;
  }
  std::string workflow(const std::string& stages) {
    return write_workflow("name: sl\nhosts:\n  cluster:\n    scheduler: slurm\nstages:\n" + stages);
  }
  std::string sql(const std::string& query) {
    return testing::run_process({"sqlite3", "-cmd", ".timeout 10000", home_.file("ferry.db"), query}).out;
  }
  std::string host_dir() const { return home_.path() + "/hosts/cluster/"; }
  std::string squeue_state(const std::string& id) {
    auto r = testing::run_process({"squeue", "-h", "-t", "all", "-j", id, "-o", "%T"},
                                  {{"SLURM_CONF", cluster_.file("slurm.conf")}});
    while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
    return r.out;
  }

  testing::TempDir cluster_;
  std::string shims_ = work_.path() + "/shims";
  bool started_ = false;
};

TEST_F(SlurmRunTest, SubmitsRunsTwoStagesAtOnceAndRecordsTheExitCodeOnce) {
  auto wf = workflow(R"(  a:
    run: |
      touch a.started; echo "a in slurm job $SLURM_JOB_ID"
      for i in $(seq 600); do [ -f b.started ] && break; sleep 0.1; done
      [ -f b.started ] && echo answer=42 >> "$FERRY_OUTPUT"
    outputs: [answer]
  b:
    run: |
      touch b.started
      for i in $(seq 600); do [ -f a.started ] && break; sleep 0.1; done
      [ -f a.started ]
  c:
    needs: [a, b]
    run: echo got ${{ stages.a.outputs.answer }}; exit 3
)");
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto st = status("sl-1");
  EXPECT_EQ(stage(st, "a")["state"], "succeeded") << st.dump();
  EXPECT_EQ(stage(st, "b")["state"], "succeeded") << "a and b must run at the same time: " << st.dump();
  EXPECT_EQ(stage(st, "c")["state"], "failed");
  EXPECT_EQ(stage(st, "c")["exit_code"], 3);
  EXPECT_EQ(calls("sbatch"), 3) << read_text(calls_file());
  auto logs = ferry({"logs", "sl-1", "a"});
  EXPECT_NE(logs.out.find("a in slurm job "), std::string::npos) << logs.out;
  EXPECT_EQ(ferry({"logs", "sl-1", "c"}).out, "got 42\n");
  // The Slurm job id is in the store with the launch, and Slurm ran the job under ferry's name.
  std::string id =
      sql("SELECT json_extract(detail,'$.slurm_job') FROM events WHERE run_id='sl-1' AND stage='c' "
          "AND type='attempt.launched'");
  while (!id.empty() && id.back() == '\n') id.pop_back();
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(squeue_state(id), "FAILED");
  auto name = testing::run_process({"squeue", "-h", "-t", "all", "-j", id, "-o", "%j"},
                                   {{"SLURM_CONF", cluster_.file("slurm.conf")}});
  EXPECT_NE(name.out.find("sl-1."), std::string::npos) << name.out;
  EXPECT_NE(name.out.find(".c.1"), std::string::npos) << name.out;
  EXPECT_EQ(sql("SELECT count(*) FROM events WHERE run_id='sl-1' AND stage='c' AND type='attempt.finished'"), "1\n");
}

TEST_F(SlurmRunTest, PendingJobShowsQueuedWithSlurmsReason) {
  std::string release = work_.file("release");
  auto wf = workflow(R"(  hog:
    run: while [ ! -f )" +
                     release + R"( ]; do sleep 0.1; done
    slurm: {gres: "gpu:2"}
  waiter:
    run: echo "waited; CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
    slurm: {gres: "gpu:1"}
)");
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  std::string detail;
  bool queued = wait_until(
      [&] {
        detail = ferry({"status", "sl-1"}).out;
        return detail.find("queued: Resources") != std::string::npos;
      },
      std::chrono::seconds(60));
  write_text(release, "go");
  EXPECT_TRUE(queued) << detail << read_text(work_.file("run.log"));
  EXPECT_EQ(testing::wait_process(coordinator, 120), 0) << read_text(work_.file("run.log"));
  EXPECT_NE(ferry({"logs", "sl-1", "waiter"}).out.find("waited; CUDA_VISIBLE_DEVICES=0"), std::string::npos);
}

TEST_F(SlurmRunTest, CancelRunsScancelAndTheStageEndsCancelled) {
  auto wf = workflow(R"(  sleepy:
    run: echo started; sleep 300
)");
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  ASSERT_TRUE(ferry.wait_for_output("sl-1", "sleepy", "started", std::chrono::seconds(60)))
      << read_text(work_.file("run.log"));
  auto c = ferry({"cancel", "sl-1"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(testing::wait_process(coordinator, 60), 130) << read_text(work_.file("run.log"));
  EXPECT_EQ(calls("scancel"), 1) << read_text(calls_file());
  EXPECT_EQ(squeue_state("1"), "CANCELLED");
  auto st = stage(status("sl-1"), "sleepy");
  EXPECT_EQ(st["state"], "cancelled") << st.dump();
}

TEST_F(SlurmRunTest, CancelledBySlurmNotFerryIsRetriedWhenRetryOnNamesIt) {
  // The first attempt is scancelled from inside (as an administrator would): ferry
  // did not ask for it, so it is a failure with cause CANCELLED, which retry_on names.
  auto wf = workflow(R"(  selfcancel:
    run: |
      if [ ! -f once ]; then touch once; scancel "$SLURM_JOB_ID"; sleep 60; fi
      echo second
    retries: 2
    retry_backoff: 10ms
    retry_on: [CANCELLED]
)");
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = stage(status("sl-1"), "selfcancel");
  EXPECT_EQ(st["state"], "succeeded") << st.dump();
  EXPECT_EQ(st["attempt"], 2);
  std::string first = sql("SELECT error FROM attempts WHERE run_id='sl-1' AND stage='selfcancel' AND attempt=1");
  EXPECT_NE(first.find("not by ferry (CANCELLED)"), std::string::npos) << first;
}

// Slurm's own time limit (`slurm: {time: ...}`, no ferry `timeout`): Slurm ends the job
// TIMEOUT, and the stage ends timed_out with Slurm's cause.
TEST_F(SlurmRunTest, SlurmsTimeLimitEndsTheStageTimedOut) {
  auto wf = workflow(R"(  slow:
    run: echo started; sleep 600
    slurm: {time: 1m}
)");
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(read_text(calls_file()).find("--time=1 "), std::string::npos) << read_text(calls_file());
  auto st = stage(status("sl-1"), "slow");
  EXPECT_EQ(st["state"], "timed_out") << st.dump();
  EXPECT_NE(st.value("error", std::string()).find("TIMEOUT"), std::string::npos) << st.dump();
  EXPECT_EQ(squeue_state("1"), "TIMEOUT");
}

// A stage `timeout` becomes --time (whole minutes, rounded up) and is enforced by ferry
// too, at the second: a 15 s timeout ends the job (scancel) long before Slurm's minute.
TEST_F(SlurmRunTest, TimeoutBecomesSlurmTimeLimitAndFerryEndsTheJobAtTheTimeout) {
  auto wf = workflow(R"(  slow:
    run: echo started; sleep 600
    timeout: 15s
)");
  const auto start = std::chrono::steady_clock::now();
  auto r = ferry({"run", wf});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(read_text(calls_file()).find("--time=1 "), std::string::npos) << read_text(calls_file());
  auto st = stage(status("sl-1"), "slow");
  EXPECT_EQ(st["state"], "timed_out") << st.dump();
  EXPECT_NE(st.value("error", std::string()).find("timed out after 15s"), std::string::npos) << st.dump();
  EXPECT_LT(took, std::chrono::seconds(55)) << "ended by Slurm's minute, not by ferry's timeout";
  EXPECT_GE(calls("scancel"), 1) << read_text(calls_file());
  EXPECT_EQ(squeue_state("1"), "CANCELLED");
}

TEST_F(SlurmRunTest, ResumeAfterSigkillReattachesToTheSameJob) {
  std::string release = work_.file("release");
  auto wf = workflow(R"(  long:
    run: |
      echo started
      while [ ! -f )" +
                     release + R"( ]; do sleep 0.1; done
      echo finished; exit 4
)");
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  ASSERT_TRUE(ferry.wait_for_output("sl-1", "long", "started", std::chrono::seconds(60)))
      << read_text(work_.file("run.log"));
  ::kill(coordinator, SIGKILL);
  testing::wait_process(coordinator);
  EXPECT_EQ(squeue_state("1"), "RUNNING") << "the job died with its coordinator";
  write_text(release, "go");
  auto r = ferry({"resume", "sl-1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto st = stage(status("sl-1"), "long");
  EXPECT_EQ(st["state"], "failed");
  EXPECT_EQ(st["exit_code"], 4);
  EXPECT_EQ(st["attempt"], 1) << "re-attached, not submitted again";
  EXPECT_EQ(calls("sbatch"), 1) << read_text(calls_file());
  EXPECT_EQ(sql("SELECT count(*) FROM events WHERE run_id='sl-1' AND stage='long' AND type='attempt.reattached'"),
            "1\n");
  EXPECT_EQ(sql("SELECT count(*) FROM events WHERE run_id='sl-1' AND stage='long' AND type='attempt.finished'"), "1\n");
  EXPECT_EQ(ferry({"logs", "sl-1", "long"}).out, "started\nfinished\n");
}

TEST_F(SlurmRunTest, SbatchRefusalFailsTheStageByNameAndRecordsNoJob) {
  auto wf = workflow(R"(  nowhere:
    run: echo never
    slurm: {partition: nosuchpartition}
)");
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto st = stage(status("sl-1"), "nowhere");
  EXPECT_EQ(st["state"], "failed");
  std::string error = st.value("error", std::string());
  EXPECT_NE(error.find("sbatch refused the job"), std::string::npos) << error;
  EXPECT_NE(error.find("invalid partition"), std::string::npos) << error;
  EXPECT_NE((r.out + r.err).find("nowhere"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(sql("SELECT count(*) FROM events WHERE run_id='sl-1' AND json_extract(detail,'$.slurm_job') IS NOT NULL"),
            "0\n");
  EXPECT_EQ(testing::run_process({"sh", "-c", "ls " + host_dir() + ".ferry/jobs/*/1/ | sort | tr '\\n' ' '"}).out,
            "job.sh spec.json ")
      << "a refused submission leaves no submit.json or slurm.json";
}

TEST_F(SlurmRunTest, LoginNodeWithoutSlurmIsAClearError) {
  auto wf = workflow(R"(  nojob:
    run: echo never
)");
  auto r = ferry.with_env({{"PATH", "/nonexistent"}})({"run", wf});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  auto st = stage(status("sl-1"), "nojob");
  EXPECT_NE(st.value("error", std::string()).find("this host has no Slurm client: 'sbatch'"), std::string::npos)
      << st.dump();
}

TEST_F(SlurmRunTest, HostsCheckListsPartitionsAndFlagsAnUnknownOne) {
  auto wf = workflow(R"(  train:
    run: echo hi
    slurm: {partition: gpu-long}
  ok:
    run: echo hi
    slurm: {partition: short}
)");
  auto r = ferry({"hosts", "check", wf});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("slurm: yes — partitions debug* (up, 1 node(s), limit infinite, gpu:2)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("short (up"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("UNKNOWN PARTITION 'gpu-long' (stage 'train')"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("'short' (stage"), std::string::npos) << r.out;
}

// Issue 27's example, as a user runs it: dflash-tiny trains as Slurm jobs, its
// checkpoints are relayed to another host and evaluated there.
TEST_F(SlurmRunTest, TheSlurmExampleTrainsOnSlurmAndEvaluatesElsewhere) {
  if (!exists(testing::bin_dir() + "/dflash-train-drafter") || !exists(testing::bin_dir() + "/ferry-eval")) {
    GTEST_SKIP() << "SLURM EXAMPLE SKIPPED: this build has no trainers or eval worker (FERRY_WITH_TORCH=OFF)";
  }
  auto r = ferry({"run", FERRY_SOURCE_DIR "/examples/slurm/workflow.yaml", "-p", "bin=" + testing::bin_dir()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto st = status("dflash-tiny-slurm-1");
  auto eval = stage(st, "eval");
  EXPECT_EQ(eval["state"], "succeeded") << st.dump(2);
  EXPECT_GT(std::stod(eval["outputs"].value("tau", std::string("0"))), 2.0) << eval.dump(2);
  EXPECT_EQ(calls("sbatch"), 4) << "data, target, drafter, reference: " << read_text(calls_file());
  for (const char* trained : {"data", "target", "drafter", "reference"}) {
    std::string id = sql(std::string("SELECT json_extract(detail,'$.slurm_job') FROM events WHERE "
                                     "run_id='dflash-tiny-slurm-1' AND stage='") +
                         trained + "' AND type='attempt.launched'");
    while (!id.empty() && id.back() == '\n') id.pop_back();
    EXPECT_FALSE(id.empty()) << trained << " ran as a Slurm job";
    if (!id.empty()) {
      EXPECT_EQ(squeue_state(id), "COMPLETED") << trained;
    }
  }
  EXPECT_TRUE(exists(home_.path() + "/hosts/evaluator/models/drafter/model.safetensors"));
}

// An eval on a Slurm host: its worker is a Slurm job like any stage's command.
TEST_F(SlurmRunTest, AnEvalOnASlurmHostRunsItsWorkerAsASlurmJob) {
  if (!exists(testing::bin_dir() + "/ferry-eval") || !exists(testing::bin_dir() + "/ferry-tiny-models")) {
    GTEST_SKIP() << "SLURM EVAL SKIPPED: this build has no eval worker (FERRY_WITH_TORCH=OFF)";
  }
  testing::run_process({"mkdir", "-p", host_dir()});
  auto tiny = testing::run_process({testing::bin_dir() + "/ferry-tiny-models", "suite", "--out", host_dir()});
  ASSERT_EQ(tiny.exit_code, 0) << tiny.err;
  auto wf = workflow(R"(  eval:
    kind: eval
    host: cluster
    target: oracle-target
    drafter: oracle-agree
    reference: oracle-disagree
    prompts: oracle-prompts.jsonl
    max_new_tokens: 16
    threads: 1
    slurm: {cpus: 1, mem: 1G}
)");
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto eval = stage(status("sl-1"), "eval");
  EXPECT_EQ(eval["state"], "succeeded") << eval.dump(2);
  EXPECT_GT(std::stod(eval["outputs"].value("tau", std::string("0"))), 1.5) << eval.dump(2);
  EXPECT_EQ(calls("sbatch"), 1) << read_text(calls_file());
  std::string id =
      sql("SELECT json_extract(detail,'$.slurm_job') FROM events WHERE run_id='sl-1' AND stage='eval' "
          "AND type='attempt.launched'");
  while (!id.empty() && id.back() == '\n') id.pop_back();
  ASSERT_FALSE(id.empty()) << "the worker ran as a Slurm job";
  EXPECT_EQ(squeue_state(id), "COMPLETED");
  EXPECT_NE(read_text(calls_file()).find("--mem=1G"), std::string::npos) << read_text(calls_file());
}

// log_max on a Slurm host (review-4 P4): the job's output is kept within it on the
// shared filesystem (by the agent binary there, on the compute node) and in the
// coordinator's copy, which never receives the dropped bytes.
TEST_F(SlurmRunTest, AStageWriting50MBKeepsAtMostLogMaxOnTheSharedFilesystemAndInTheMirror) {
  auto wf = workflow(R"(  chatty:
    run: head -c 50000000 /dev/zero | tr '\0' 'x'; echo; echo the end
    log_max: 4M
)");
  auto r = ferry({"run", wf});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const int64_t on_host = bytes_in(host_dir() + ".ferry/jobs/*/1/log*");
  const int64_t mirror = bytes_in(home_.path() + "/logs/sl-1/chatty/1.log*");
  std::cout << "50 MB written with log_max 4M: " << on_host << " bytes on the shared filesystem, " << mirror
            << " in the coordinator's copy\n";
  EXPECT_LE(on_host, 4 << 20);
  EXPECT_GE(on_host, 3 << 20);
  EXPECT_LE(mirror, 4 << 20);
  auto tail = ferry({"logs", "sl-1", "chatty", "--tail", "1"});
  EXPECT_EQ(tail.out, "the end\n") << tail.err;
  EXPECT_NE(ferry({"logs", "sl-1", "chatty"}).out.find("bytes dropped here"), std::string::npos);
}

// Adoption of a submission whose answer was lost (review-4 P7): the agent dies
// right after a job of another user, with our job's name, appeared. The next agent
// finds no job of ours by that name and submits afresh; it does not adopt theirs.
TEST_F(SlurmRunTest, AnotherUsersJobOfTheSameNameIsNotAdopted) {
  const std::string foreign_id = work_.file("foreign.id");
  shim("sbatch", "if [ ! -f " + foreign_id +
                     " ]; then\n"
                     "  for a in \"$@\"; do case \"$a\" in --job-name=*) name=${a#--job-name=};; esac; done\n"
                     "  /usr/bin/sbatch --parsable --uid=65534 --hold --job-name=\"$name\" --output=/dev/null "
                     "--chdir=/tmp --wrap 'sleep 300' > " +
                     foreign_id +
                     "\n"
                     "  kill -KILL $PPID; exit 1\n"
                     "fi\n"
                     "exec /usr/bin/sbatch \"$@\"\n");
  auto wf = workflow(R"(  ours:
    run: echo "ours ran as $SLURM_JOB_ID"
)");
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  EXPECT_EQ(testing::wait_process(coordinator, 180), 0) << read_text(work_.file("run.log"));
  std::string foreign = read_text(foreign_id);
  while (!foreign.empty() && foreign.back() == '\n') foreign.pop_back();
  ASSERT_FALSE(foreign.empty());
  EXPECT_EQ(calls("sbatch"), 2) << read_text(calls_file());
  EXPECT_EQ(squeue_state(foreign), "PENDING") << "the other user's job is left as it was";
  std::string logs = ferry({"logs", "sl-1", "ours"}).out;
  EXPECT_NE(logs.find("ours ran as "), std::string::npos) << logs;
  EXPECT_EQ(logs.find("ours ran as " + foreign + "\n"), std::string::npos) << logs;
  EXPECT_NE(read_text(calls_file()).find("squeue --me -h -t all --name="), std::string::npos)
      << read_text(calls_file());
}

// A recorded id that now names another job (Slurm reused it; here sbatch's answer is
// another user's job of our name, and squeue is faked to keep our stage running):
// `ferry cancel` runs scancel, restricted to our job of that name, so theirs stays.
TEST_F(SlurmRunTest, ACancelLeavesAJobThatNowHoldsTheRecordedId) {
  const std::string id_file = work_.file("foreign.id"), name_file = work_.file("name"), fake = work_.file("fake");
  write_text(fake, "");
  shim("sbatch",
       "for a in \"$@\"; do case \"$a\" in --job-name=*) name=${a#--job-name=};; esac; done\n"
       "printf %s \"$name\" > " +
           name_file +
           "\n"
           "/usr/bin/sbatch --parsable --uid=65534 --hold --job-name=\"$name\" --output=/dev/null "
           "--chdir=/tmp --wrap 'sleep 300' | tee " +
           id_file + "\n");
  shim("squeue", "if [ -f " + fake + " ]; then echo \"$(cat " + id_file + ")|RUNNING|None|$(cat " + name_file +
                     ")\"; exit 0; fi\nexec /usr/bin/squeue \"$@\"\n");
  auto wf = workflow(R"(  sleepy:
    run: sleep 300
)");
  pid_t coordinator = spawn_ferry({"run", wf}, "run.log");
  auto running = [&] {
    auto j = nlohmann::json::parse(ferry({"status", "sl-1", "--json"}).out, nullptr, false);
    if (!j.is_object()) return false;  // no run yet
    auto p = stage(j, "sleepy")["progress"];
    return p.is_object() && p.value("slurm_state", std::string()) == "RUNNING";
  };
  ASSERT_TRUE(wait_until(running, std::chrono::seconds(60)))
      << status("sl-1").dump() << read_text(work_.file("run.log"));
  EXPECT_EQ(ferry({"cancel", "sl-1"}).exit_code, 0);
  ASSERT_TRUE(wait_until([&] { return calls("scancel") >= 1; }, std::chrono::seconds(60))) << read_text(calls_file());
  std::string foreign = read_text(id_file);
  while (!foreign.empty() && foreign.back() == '\n') foreign.pop_back();
  EXPECT_NE(read_text(calls_file()).find("scancel --me --jobname="), std::string::npos) << read_text(calls_file());
  EXPECT_EQ(squeue_state(foreign), "PENDING") << "scancel reached another user's job";
  ::unlink(fake.c_str());  // the listing tells the truth again: our job is not there
  EXPECT_EQ(testing::wait_process(coordinator, 120), 130) << read_text(work_.file("run.log"));
  EXPECT_EQ(squeue_state(foreign), "PENDING");
}

}  // namespace
}  // namespace ferry
