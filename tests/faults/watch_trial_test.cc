// The fault suite's trial of a checkpoint watch over an ordinary trainer (review 3,
// N3), on the SSH testbed: the trainer on h1 saves six checkpoints 1.5 s apart, keeps
// only the newest two (Hugging Face's save_total_limit: 2), points `latest` at the
// newest and keeps a wandb-style `wandb/latest-run` link; the watching eval on h2
// copies and evaluates what it can. The run succeeds, the last checkpoint is
// evaluated, and every rotated one is either evaluated or recorded as skipped with
// its cause (or was gone before it was complete). Adds its row to the suite's table.
#include <set>

#include "tests/e2e_ssh/e2e_ssh_env.h"
#include "tests/faults/fault_table.h"

namespace ferry::e2e {
namespace {

class WatchTrialTest : public SshRunTest {};

TEST_F(WatchTrialTest, AWatchOverARotatingTrainerWithLatestLinksEvaluatesTheLastCheckpoint) {
  const std::string h1 = workdir("h1"), h2 = workdir("h2");
  ASSERT_EQ(testing::run_process({"mkdir", "-p", h1, h2}).exit_code, 0);
  auto tiny = testing::run_process({testing::bin_dir() + "/ferry-tiny-models", "suite", "--out", h2});
  ASSERT_EQ(tiny.exit_code, 0) << tiny.err;
  const std::string trainer =
      "mkdir -p ckpt/wandb/run-1 && ln -sfn run-1 ckpt/wandb/latest-run\n"
      "      for i in 1 2 3 4 5 6; do\n"
      "        d=ckpt/checkpoint-$i; mkdir -p $d; echo $i > $d/step.txt\n"
      "        if [ $((i % 2)) = 0 ]; then m=agree; else m=disagree; fi\n"
      "        cp " + h2 + "/oracle-$m/* $d/\n"
      "        ln -sfn checkpoint-$i ckpt/latest\n"
      "        ls -d ckpt/checkpoint-* | sort -t- -k2 -n | head -n -2 | xargs -r rm -rf\n"
      "        sleep 1.5\n"
      "      done\n";
  std::string wf = write_workflow(
      "name: rotate\nhosts:\n" + host_entry(0) + host_entry(1) + "stages:\n  train:\n    host: h1\n    run: |\n      " +
      trainer + "  eval:\n    kind: eval\n    host: h2\n    watch: {stage: train, from: h1:ckpt}\n"
      "    drafter: checkpoints\n    target: oracle-target\n    reference: oracle-disagree\n"
      "    prompts: oracle-prompts.jsonl\n    max_new_tokens: 16\n    threads: 1\n");
  auto r = ferry({"run", wf}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  std::vector<std::string> evaluated;
  std::set<std::string> seen;
  double last_tau = -1;
  int skipped = 0;
  std::string causes;
  for (const auto& e : events("rotate-1", "eval")) {
    auto d = nlohmann::json::parse(e.detail, nullptr, false);
    if (!d.is_object()) continue;
    if (e.type == "eval.report") {
      evaluated.push_back(d.value("checkpoint", std::string()));
      last_tau = d["candidate"].value("tau", -1.0);
    } else if (e.type == "watch.skipped") {
      ++skipped;
      EXPECT_FALSE(d.value("cause", std::string()).empty()) << d.dump();
      causes += " " + d.value("checkpoint", std::string()) + " (" + d.value("during", std::string()) + ")";
    } else {
      continue;
    }
    EXPECT_TRUE(seen.insert(d.value("checkpoint", std::string())).second) << "taken twice: " << d.dump();
  }
  const bool last = !evaluated.empty() && evaluated.back() == "checkpoint-6";
  EXPECT_TRUE(last) << dump(events("rotate-1", "eval"));
  EXPECT_GT(last_tau, 1.5) << "checkpoint-6 is the drafter the target accepts";

  Outcome o;
  o.trial = "watch: rotation (save_total_limit 2) + links";
  o.succeeded = r.exit_code == 0 && last && last_tau > 1.5;
  o.tau = last_tau;
  o.figure = "6 saved: " + std::to_string(evaluated.size()) + " evaluated, " + std::to_string(skipped) +
             " skipped" + causes + ", " + std::to_string(6 - static_cast<int>(seen.size())) +
             " rotated before complete";
  table().push_back(std::move(o));
}

}  // namespace
}  // namespace ferry::e2e
