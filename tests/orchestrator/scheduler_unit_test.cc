// The scheduler's logic, without agent processes or SSH: its hosts' links are
// InProcessTransports (tests/support/in_process_transport.h), each an AgentServer in
// this process over a folder of the test's, so the scheduler drives real HostConnections
// and a real SQLite store while the stages' jobs are small /bin/sh scripts that the agent
// starts detached, as on a real host. Link faults are injected per host. The same
// stories through the real binaries are local_run_test and the testbed tests.
#include "orchestrator/scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "base/file_util.h"
#include "tests/support/in_process_transport.h"
#include "tests/support/process.h"
#include "tests/support/store_test.h"
#include "workflows/parser.h"

namespace ferry {

// Failures name the states ("skipped"), not their bytes.
void PrintTo(StageState s, std::ostream* os) { *os << state_name(s); }
void PrintTo(RunState s, std::ostream* os) { *os << state_name(s); }

namespace {

using testing::LinkFaults;
using testing::read_text;

class SchedulerUnitTest : public testing::TempStoreTest {
 protected:
  // A workflow named "unit" on one host `h` whose workdir is host_dir(), over `stages`.
  std::string workflow(const std::string& stages, const std::string& host_settings = "") {
    return "name: unit\nhosts:\n  h:\n    workdir: " + host_dir() + "\n" + host_settings + "stages:\n" + stages;
  }
  std::string host_dir() const { return dir_.file("h"); }

  // Records a new run of `yaml` as `ferry run` does; run() runs it.
  void record_run(const std::string& yaml) {
    auto wf = workflow::parse_workflow(dir_.file("wf.yaml"), yaml);
    ASSERT_TRUE(wf.ok()) << wf.status().message();
    std::vector<StageSeed> seeds;
    for (const auto& st : wf->stages) seeds.push_back({st.name, workflow::stage_kind_name(st.kind), st.host});
    auto run = store_->create_run(wf->name, wf->path, wf->source, nlohmann::json::object(), seeds);
    ASSERT_TRUE(run.ok()) << run.status().message();
    run_id_ = run->id;
  }
  RunState run_new(const std::string& yaml) {
    record_run(yaml);
    return run();
  }

  // Runs the recorded run to its end from its record, as `ferry resume` does (a new run too:
  // its record holds the workflow's text). Returns how it ended.
  RunState run() {
    auto record = store_->find_run(run_id_);
    EXPECT_TRUE(record.ok()) << record.status().message();
    if (!record.ok()) return RunState::kPending;
    auto wf = workflow::parse_workflow(record->workflow_path, record->workflow_source);
    EXPECT_TRUE(wf.ok()) << wf.status().message();
    if (!wf.ok()) return RunState::kPending;
    SchedulerOptions options;
    options.logs_dir = dir_.file("logs");
    options.ferry_home = dir_.file("home");
    options.transports = testing::in_process_transports({{"h", faults_}, {"b", b_faults_}});
    options.connection.backoff_initial_s = 0.05;  // a dropped link comes back within the test's patience
    Scheduler scheduler(*store_, std::move(*wf), *record, options);
    auto state = scheduler.run();
    EXPECT_TRUE(state.ok()) << state.status().message();
    return state.ok() ? *state : RunState::kPending;
  }

  StageRecord stage(const std::string& name) {
    auto stages = store_->stages(run_id_);
    EXPECT_TRUE(stages.ok()) << stages.status().message();
    for (const auto& st : stages.ok() ? *stages : std::vector<StageRecord>{}) {
      if (st.name == name) return st;
    }
    ADD_FAILURE() << "no stage '" << name << "' recorded";
    return StageRecord();
  }
  std::vector<AttemptRecord> attempts(const std::string& stage_name) {
    auto a = store_->attempts(run_id_, stage_name);
    EXPECT_TRUE(a.ok()) << a.status().message();
    return a.ok() ? *a : std::vector<AttemptRecord>{};
  }
  int count_events(const std::string& stage_name, const std::string& type) {
    auto events = store_->events(run_id_, stage_name);
    EXPECT_TRUE(events.ok()) << events.status().message();
    int n = 0;
    for (const auto& e : events.ok() ? *events : std::vector<EventRecord>{}) n += e.type == type;
    return n;
  }

  std::shared_ptr<LinkFaults> faults_ = std::make_shared<LinkFaults>();    // on host h
  std::shared_ptr<LinkFaults> b_faults_ = std::make_shared<LinkFaults>();  // on host b, a copy's destination
  std::string run_id_;
};

TEST_F(SchedulerUnitTest, AStageStartsOnlyAfterItsNeedsAndAFailureSkipsWhatNeedsIt) {
  RunState state = run_new(workflow(R"yaml(
  first:
    host: h
    run: echo first >> ran.txt
  second:
    host: h
    needs: first
    run: echo second >> ran.txt
  broken:
    host: h
    needs: second
    run: exit 3
  after_broken:
    host: h
    needs: broken
    run: echo after_broken >> ran.txt
)yaml"));
  EXPECT_EQ(state, RunState::kFailed);
  EXPECT_EQ(read_text(host_dir() + "/ran.txt"), "first\nsecond\n");
  auto first = attempts("first"), second = attempts("second");
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_GE(second[0].started_ms, first[0].ended_ms) << "'second' started before 'first' ended";
  StageRecord broken = stage("broken");
  EXPECT_EQ(broken.state, StageState::kFailed);
  EXPECT_EQ(broken.exit_code, 3);
  StageRecord skipped = stage("after_broken");
  EXPECT_EQ(skipped.state, StageState::kSkipped);
  EXPECT_EQ(skipped.attempt, 0) << "a skipped stage never makes an attempt";
  EXPECT_NE(skipped.error.find("'broken'"), std::string::npos) << skipped.error;
}

TEST_F(SchedulerUnitTest, RetriesMakeNewAttemptsUntilOneSucceeds) {
  // Fails on its first two attempts, counted in a file the attempts share.
  RunState state = run_new(workflow(R"yaml(
  flaky:
    host: h
    retries: 3
    retry_backoff: 10ms
    run: |
      echo x >> tries.txt
      test "$(wc -l < tries.txt)" -ge 3
)yaml"));
  EXPECT_EQ(state, RunState::kSucceeded);
  StageRecord flaky = stage("flaky");
  EXPECT_EQ(flaky.state, StageState::kSucceeded);
  EXPECT_EQ(flaky.attempt, 3);
  auto tries = attempts("flaky");
  ASSERT_EQ(tries.size(), 3u);
  EXPECT_EQ(tries[0].state, StageState::kFailed);
  EXPECT_EQ(tries[0].exit_code, 1);
  EXPECT_EQ(tries[1].state, StageState::kFailed);
  EXPECT_EQ(tries[2].state, StageState::kSucceeded);
  EXPECT_NE(tries[0].token, tries[1].token) << "each attempt has a token of its own";
  EXPECT_EQ(read_text(host_dir() + "/tries.txt"), "x\nx\nx\n");
}

TEST_F(SchedulerUnitTest, RetryOnRetriesOnlyTheExitCodesItNames) {
  RunState state = run_new(workflow(R"yaml(
  named_code:
    host: h
    retries: 2
    retry_backoff: 10ms
    retry_on: [75]
    run: exit 75
  other_code:
    host: h
    retries: 2
    retry_backoff: 10ms
    retry_on: [75]
    run: exit 3
)yaml"));
  EXPECT_EQ(state, RunState::kFailed);
  EXPECT_EQ(attempts("named_code").size(), 3u) << "75 is retried while retries remain";
  EXPECT_EQ(stage("named_code").exit_code, 75);
  EXPECT_EQ(attempts("other_code").size(), 1u) << "3 is not in retry_on";
  EXPECT_EQ(stage("other_code").state, StageState::kFailed);
}

TEST_F(SchedulerUnitTest, AResumedRunKeepsWhatSucceededAndRunsTheRestAgain) {
  const std::string wf = workflow(R"yaml(
  done_once:
    host: h
    run: echo ran >> done_once.txt
  needs_go:
    host: h
    needs: done_once
    run: test -f go
)yaml");
  ASSERT_EQ(run_new(wf), RunState::kFailed);
  ASSERT_EQ(stage("needs_go").state, StageState::kFailed);
  testing::write_text(host_dir() + "/go", "");

  EXPECT_EQ(run(), RunState::kSucceeded);
  EXPECT_EQ(read_text(host_dir() + "/done_once.txt"), "ran\n") << "a success was run again";
  EXPECT_EQ(stage("done_once").attempt, 1);
  StageRecord again = stage("needs_go");
  EXPECT_EQ(again.state, StageState::kSucceeded);
  EXPECT_EQ(again.attempt, 2) << "the resumed attempt is numbered after the failed one";
}

TEST_F(SchedulerUnitTest, OutputsOfAStageReachALaterStagesTemplates) {
  // The value has a space and shell syntax: a template is one shell word, quoted for it.
  RunState state = run_new(workflow(R"yaml(
  make:
    host: h
    run: |
      echo "count=42" >> "$FERRY_OUTPUT"
      echo 'phrase=two words; exit 9' >> "$FERRY_OUTPUT"
    outputs: [count, phrase]
  use:
    host: h
    needs: make
    run: |
      test ${{ stages.make.outputs.count }} = 42
      printf %s ${{ stages.make.outputs.phrase }} > phrase.txt
)yaml"));
  EXPECT_EQ(state, RunState::kSucceeded);
  EXPECT_EQ(stage("make").outputs,
            (std::map<std::string, std::string>{{"count", "42"}, {"phrase", "two words; exit 9"}}));
  EXPECT_EQ(stage("use").state, StageState::kSucceeded) << stage("use").error;
  EXPECT_EQ(read_text(host_dir() + "/phrase.txt"), "two words; exit 9");
}

TEST_F(SchedulerUnitTest, ALinkLostWhileAStageRunsIsReconnectedAndTheSameAttemptSucceeds) {
  // The first status poll never reaches the agent: the link breaks under the running job.
  faults_->drop_link_on("job.status");
  RunState state = run_new(workflow(R"yaml(
  steady:
    host: h
    run: echo ran >> ran.txt
)yaml"));
  EXPECT_EQ(state, RunState::kSucceeded);
  EXPECT_EQ(faults_->links_dropped(), 1);
  EXPECT_GE(faults_->links_opened(), 2) << "the scheduler never opened a second link";
  EXPECT_EQ(stage("steady").attempt, 1) << "a lost link is not a failed attempt";
  EXPECT_EQ(read_text(host_dir() + "/ran.txt"), "ran\n") << "the job ran again after the reconnect";
  EXPECT_EQ(count_events("steady", "host.disconnected"), 1);
  EXPECT_EQ(count_events("steady", "host.reconnected"), 1);
}

TEST_F(SchedulerUnitTest, AHostThatNeverComesBackIsGivenUpOnAfterItsGiveUpTime) {
  faults_->drop_link_on("job.status");
  faults_->stay_down_after_a_drop();
  RunState state = run_new(workflow(R"yaml(
  stranded:
    host: h
    run: "true"
  after_stranded:
    host: h
    needs: stranded
    run: "true"
)yaml",
                                    "    give_up: 1s\n"));
  EXPECT_EQ(state, RunState::kFailed);
  StageRecord stranded = stage("stranded");
  EXPECT_EQ(stranded.state, StageState::kFailed);
  EXPECT_NE(stranded.error.find("gave up on host 'h'"), std::string::npos) << stranded.error;
  EXPECT_EQ(faults_->links_opened(), 1);
  EXPECT_EQ(stage("after_stranded").state, StageState::kSkipped);
}

TEST_F(SchedulerUnitTest, ACancelAskedThroughTheStoreStopsTheRunningJobAndStartsNothingAfterIt) {
  // `ferry cancel` from another process: the flag in the store, read by the running scheduler.
  const std::string wf = workflow(R"yaml(
  long:
    host: h
    run: sleep 60
  after_long:
    host: h
    needs: long
    run: "true"
)yaml");
  record_run(wf);
  ASSERT_TRUE(store_->request_cancel(run_id_).ok());
  EXPECT_EQ(run(), RunState::kCancelled);
  StageRecord cancelled = stage("long");
  EXPECT_EQ(cancelled.state, StageState::kCancelled) << cancelled.error;
  EXPECT_EQ(cancelled.attempt, 1);
  StageRecord after = stage("after_long");
  EXPECT_EQ(after.state, StageState::kSkipped) << "its need did not succeed";
  EXPECT_EQ(after.attempt, 0);
}

TEST_F(SchedulerUnitTest, ATimedOutAttemptIsRetriedUnderATimeoutOfItsOwnAndAFinalTimeoutSkipsWhatNeedsIt) {
  // The first attempt of `slow_once` hangs and the second returns at once; `always_slow`
  // hangs on every attempt. Each attempt gets the whole `timeout` again.
  RunState state = run_new(workflow(R"yaml(
  slow_once:
    host: h
    run: if [ -f tried ]; then echo ok; else touch tried; sleep 60; fi
    timeout: 3s
    retries: 1
    retry_backoff: 10ms
  always_slow:
    host: h
    run: sleep 60
    timeout: 1s
    retries: 1
    retry_backoff: 10ms
  after_slow:
    host: h
    needs: always_slow
    run: "true"
)yaml"));
  EXPECT_EQ(state, RunState::kFailed);
  StageRecord once = stage("slow_once");
  EXPECT_EQ(once.state, StageState::kSucceeded) << once.error;
  EXPECT_EQ(once.attempt, 2);
  StageRecord slow = stage("always_slow");
  EXPECT_EQ(slow.state, StageState::kTimedOut) << slow.error;
  EXPECT_EQ(slow.attempt, 2) << "the timed-out attempt was not retried";
  EXPECT_NE(slow.error.find("timed out after 1s"), std::string::npos) << slow.error;
  StageRecord after = stage("after_slow");
  EXPECT_EQ(after.state, StageState::kSkipped);
  EXPECT_EQ(after.attempt, 0);
}

TEST_F(SchedulerUnitTest, ARelayCopyRidesOutADestinationLinkDroppedMidCopyAndArrivesWhole) {
  // Three files of two 2 MiB chunks each (the second partial); h holds them, b receives.
  const std::string src = host_dir() + "/ckpt";
  ASSERT_TRUE(make_dirs(src).ok());
  std::map<std::string, std::string> files;
  for (int i = 0; i < 3; ++i) {
    std::string bytes(static_cast<size_t>((5 << 19) + 4096 * (i + 1)), '\0');
    for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<char>((k * 31 + static_cast<size_t>(i)) % 251);
    files["shard-" + std::to_string(i) + ".bin"] = bytes;
    testing::write_text(src + "/shard-" + std::to_string(i) + ".bin", bytes);
  }
  const std::string b_dir = dir_.file("b");
  b_faults_->drop_link_on("recv.write", 2);  // two lanes lose their link, each mid-chunk
  RunState state = run_new(workflow(R"yaml(
  copy:
    kind: copy
    from: h:ckpt
    to: b:ckpt
    route: relay
    streams: 2
)yaml",
                                    "  b:\n    workdir: " + b_dir + "\n"));
  EXPECT_EQ(state, RunState::kSucceeded);
  StageRecord copy = stage("copy");
  EXPECT_EQ(copy.state, StageState::kSucceeded) << copy.error;
  EXPECT_EQ(copy.attempt, 1) << "the dropped links were ridden out within the attempt";
  EXPECT_EQ(b_faults_->links_dropped(), 2);
  for (const auto& [name, bytes] : files) {
    EXPECT_EQ(read_text(b_dir + "/ckpt/" + name), bytes) << name << " did not arrive whole";
  }
  EXPECT_TRUE(testing::exists(b_dir + "/ckpt/.ferry-complete"));
  EXPECT_EQ(count_events("copy", "copy.finished"), 1);
}

}  // namespace
}  // namespace ferry
