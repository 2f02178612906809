// An eval host's result is the host's word (review 3, N2): a worker named by the
// host's env (FERRY_EVAL_WORKER, here a shell script, so no libtorch is needed)
// writes a result that is nested 200,000 deep, of the wrong types, or larger than
// any report; or the host's agent answers every read of it with nothing. Each must
// fail the eval stage with its cause, within the test's deadline, while the
// coordinator lives (exit 1, not a signal), a command stage beside it succeeds,
// and `ferry resume` meets the same result without stopping.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <ostream>

#include <nlohmann/json.hpp>

#include "tests/support/ferry_cli.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::write_text;

constexpr int kDeadlineS = 90;  // a hang (an empty read read forever) ends here and fails

// A result the host's worker writes (or its agent reads back), and the cause the
// failed eval stage must name.
struct HostileResult {
  const char* test;          // the test's name
  const char* workflow;      // its workflow's (the run is <workflow>-1)
  const char* write_result;  // shell, with $result the path the spec names
  const char* cause;
  bool agent_reads_nothing = false;  // the host's agent answers every read with nothing
};
// gtest prints a failing case's parameter by its name.
void PrintTo(const HostileResult& h, std::ostream* os) { *os << h.test; }

const HostileResult kHostileResults[] = {
    // 200,000 levels: copying or printing it recursively overflows the coordinator's stack.
    {"NestedTwoHundredThousandDeep", "deep",
     "{ printf '{\"ok\":true,\"gate_passed\":true,\"report\":'; head -c 200000 /dev/zero | tr '\\0' '[';"
     " head -c 200000 /dev/zero | tr '\\0' ']'; printf '}'; } > \"$result\"",
     "nests arrays or objects deeper than 128 levels"},
    // A field of the wrong type: value() would throw, and the run stop on every resume.
    {"WhoseOkIsAStringNamingTheField", "types", "printf '{\"ok\":\"yes\"}' > \"$result\"",
     "the eval result's 'ok' is a string, not a boolean"},
    // A result without the gate's verdict passes no gate.
    {"WithoutAGateVerdict", "verdict", "printf '{\"ok\":true,\"metrics\":{\"tau\":9}}' > \"$result\"",
     "has no 'gate_passed'"},
    // Past the cap nothing is read: a sparse file, so the test writes no 257 MiB.
    {"LargerThanTheCapRefusedUnread", "huge", "truncate -s 257M \"$result\"",
     "more than the 256 MiB an eval result may hold"},
    // An agent whose reads bring nothing (and the hash of nothing) would be asked forever.
    {"ThatTheAgentReadsAsNothing", "empty", "printf '{\"ok\":true,\"gate_passed\":true,\"report\":{}}' > \"$result\"",
     "got 0", true},
};

class HostileEvalResultTest : public ::testing::TestWithParam<HostileResult> {
 protected:
  nlohmann::json stage(const std::string& run, const std::string& name) const {
    return testing::FerryCli::stage(ferry_.status(run), name);
  }
  // A worker that writes `write_result` (shell, with $result the path the spec names).
  std::string workflow(const std::string& name, const std::string& write_result) {
    std::string worker = dir_.file(name + "-worker.sh");
    write_text(worker,
               "#!/bin/sh\n"
               "result=$(printf '%s' \"$FERRY_EVAL_SPEC\" | sed -n 's/.*\"result\":\"\\([^\"]*\\)\".*/\\1/p')\n"
               "[ -n \"$result\" ] || { echo 'no result path in the spec' >&2; exit 2; }\n"
               "mkdir -p \"$(dirname \"$result\")\"\n" +
                   write_result + "\n");
    ::chmod(worker.c_str(), 0755);
    std::string wf = dir_.file(name + ".yaml");
    write_text(wf, "name: " + name + "\nhosts:\n  box:\n    transport: local\n    workdir: " + box() +
                       "\n    env: {FERRY_EVAL_WORKER: " + worker +
                       "}\nstages:\n"
                       "  eval:\n    kind: eval\n    host: box\n    target: target\n    drafter: drafter\n"
                       "    prompts: prompts.jsonl\n"
                       "  side:\n    host: box\n    run: echo beside > side.txt\n");
    return wf;
  }
  std::string box() const { return dir_.file("box"); }

  testing::TempDir dir_;
  testing::TempDir home_;
  testing::FerryCli ferry_{home_.path(), kDeadlineS};
};

// The run, then its resume: both end with the eval failed for the result's cause,
// the coordinator alive, the command stage done.
TEST_P(HostileEvalResultTest, FailsTheEvalStageWithItsCauseOnRunAndResume) {
  const HostileResult& h = GetParam();
  const std::string run = std::string(h.workflow) + "-1";
  testing::FerryCli ferry = ferry_;
  if (h.agent_reads_nothing) {
    ferry = ferry_.with_env({{"FERRY_AGENT_BIN", testing::bin_dir() + "/lying-agent"},
                             {"LYING_AGENT_REAL", testing::bin_dir() + "/ferry-agent"},
                             {"LYING_AGENT_WORKDIR", box()},
                             {"LYING_AGENT_EMPTY_READS", "1"}});
  }
  auto r = ferry({"run", workflow(h.workflow, h.write_result)});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // not 128+SIGSEGV, not 4 (a stopped run)
  auto eval = stage(run, "eval");
  EXPECT_EQ(eval.value("state", ""), "failed") << eval.dump(2);
  EXPECT_NE(eval.value("error", "").find(h.cause), std::string::npos) << eval.dump(2);
  EXPECT_EQ(stage(run, "side").value("state", ""), "succeeded");
  EXPECT_EQ(testing::read_text(box() + "/side.txt"), "beside\n");
  // The same result again on resume (the failed eval runs again): a failed stage, no stop.
  auto again = ferry({"resume", run});
  EXPECT_EQ(again.exit_code, 1) << again.out << again.err;
  EXPECT_EQ(again.err.find("unexpected"), std::string::npos) << again.err;
  auto after = stage(run, "eval");
  EXPECT_EQ(after.value("state", ""), "failed") << after.dump(2);
  EXPECT_NE(after.value("error", "").find(h.cause), std::string::npos) << after.dump(2);
}

INSTANTIATE_TEST_SUITE_P(AResult, HostileEvalResultTest, ::testing::ValuesIn(kHostileResults),
                         [](const ::testing::TestParamInfo<HostileResult>& info) { return info.param.test; });

}  // namespace
}  // namespace ferry
