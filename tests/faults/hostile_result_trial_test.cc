// The fault suite's trial of a hostile eval host (review 3, N2), on the SSH testbed:
// h2's eval worker (a shell script its env names in FERRY_EVAL_WORKER) writes a
// result nested 200,000 deep, 200 MiB of zeros, one cut off mid-way, or one nested
// 64 deep (within the limit). The coordinator lives through each (exit 1, not a
// signal), the eval fails naming the cause while a command stage on the same host
// succeeds, and `ferry resume` meets the same result without stopping. The 64-deep
// one is a valid result: the run succeeds and its report renders. One row.
#include <sys/stat.h>

#include "tests/e2e_ssh/e2e_ssh_env.h"
#include "tests/faults/fault_table.h"

namespace ferry::e2e {
namespace {

class HostileResultTrialTest : public SshRunTest {
 protected:
  // A workflow whose eval on h2 gets the result `write_result` writes (shell, with
  // $result the path the spec names), beside a command stage on h2.
  std::string workflow(const std::string& name, const std::string& write_result) {
    const std::string h2 = workdir("h2");
    testing::run_process({"mkdir", "-p", h2});
    const std::string worker = h2 + "/" + name + "-worker.sh";
    testing::write_text(worker,
                        "#!/bin/sh\n"
                        "result=$(printf '%s' \"$FERRY_EVAL_SPEC\" | sed -n "
                        "'s/.*\"result\":\"\\([^\"]*\\)\".*/\\1/p')\n"
                        "[ -n \"$result\" ] || { echo 'no result path in the spec' >&2; exit 2; }\n"
                        "mkdir -p \"$(dirname \"$result\")\"\n" +
                            write_result + "\n");
    ::chmod(worker.c_str(), 0755);
    return write_workflow("name: " + name + "\nhosts:\n" +
                          host_entry(1, {{"env", "{FERRY_EVAL_WORKER: " + worker + "}"}}) +
                          "stages:\n"
                          "  eval:\n    kind: eval\n    host: h2\n    target: target\n    drafter: drafter\n"
                          "    prompts: prompts.jsonl\n"
                          "  side:\n    host: h2\n    run: echo beside > side-" + name + ".txt\n");
  }

  // Runs (run ids count across the test's database), then resumes: true when both end with the eval failed for `cause`,
  // exit 1, and the side stage done; `why` says what differed.
  bool fails_for(const std::string& name, const std::string& cause, std::string* why) {
    const std::string run = name + "-" + std::to_string(++runs_);
    for (const char* step : {"run", "resume"}) {
      auto r = std::string(step) == "run" ? ferry({"run", workflow_}, 300) : ferry({"resume", run}, 300);
      auto st = status(run);
      auto eval = stage(st, "eval");
      bool ok = r.exit_code == 1 && eval.value("state", "") == "failed" &&
                eval.value("error", "").find(cause) != std::string::npos &&
                stage(st, "side").value("state", "") == "succeeded" &&
                r.err.find("unexpected") == std::string::npos;
      EXPECT_TRUE(ok) << name << " " << step << ": exit " << r.exit_code << "\n" << eval.dump(2) << r.err;
      if (!ok) {
        *why += name + " " + step + ": exit " + std::to_string(r.exit_code) + " " + eval.value("error", "") + "; ";
        return false;
      }
    }
    return true;
  }

  std::string workflow_;
  int runs_ = 0;
};

TEST_F(HostileResultTrialTest, AHostileEvalResultFailsItsStageAndTheCoordinatorLives) {
  struct Case {
    std::string name, write, cause;
  };
  const std::vector<Case> cases = {
      {"deep",
       "{ printf '{\"ok\":true,\"gate_passed\":true,\"report\":'; head -c 200000 /dev/zero | tr '\\0' '[';"
       " head -c 200000 /dev/zero | tr '\\0' ']'; printf '}'; } > \"$result\"",
       "nests arrays or objects deeper than 128 levels"},
      {"zeros", "truncate -s 200M \"$result\"", "the eval result is not JSON"},
      {"cut", "printf '{\"ok\":true,\"gate_passed\":true,\"report\":{\"responses\":[{\"id\":' > \"$result\"",
       "the eval result is not JSON"},
  };
  std::string why;
  int held = 0;
  for (const auto& c : cases) {
    workflow_ = workflow(c.name, c.write);
    held += fails_for(c.name, c.cause, &why);
  }

  // 64 levels is within the limit: a valid result, stored and rendered.
  workflow_ = workflow("nested64",
                       "{ printf '{\"ok\":true,\"gate_passed\":true,\"report\":{\"deep\":'; head -c 63 /dev/zero | "
                       "tr '\\0' '['; head -c 63 /dev/zero | tr '\\0' ']'; printf '}}'; } > \"$result\"");
  auto r = ferry({"run", workflow_}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  auto report = ferry({"report", "nested64-" + std::to_string(++runs_), "-o", workdir("report.html")}, 60);
  EXPECT_EQ(report.exit_code, 0) << report.out << report.err;
  const bool nested_ok = r.exit_code == 0 && report.exit_code == 0;
  if (!nested_ok) why += "64 deep: run exit " + std::to_string(r.exit_code) + ", report exit " +
                         std::to_string(report.exit_code) + "; ";

  Outcome o;
  o.trial = "eval result: 200k deep, 200 MiB, cut, 64 deep";
  o.succeeded = held == static_cast<int>(cases.size()) && nested_ok;
  o.figure = std::to_string(held) + "/" + std::to_string(cases.size()) +
             " hostile results failed their stage (run and resume, exit 1); 64 deep ran and rendered";
  o.note = why;
  table().push_back(std::move(o));
}

}  // namespace
}  // namespace ferry::e2e
