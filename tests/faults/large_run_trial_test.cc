// The fault suite's trial of a 50 MiB `run:` (review 3, N8) on the SSH testbed: the
// command rides in job.start's body, not its header, so it runs on h1 whole and the
// host's link never drops. One row.
#include <chrono>

#include "tests/e2e_ssh/e2e_ssh_env.h"
#include "tests/faults/fault_table.h"

namespace ferry::e2e {
namespace {

class LargeRunTrialTest : public SshRunTest {};

TEST_F(LargeRunTrialTest, AFiftyMiBRunCommandRunsOnAnSshHost) {
  std::string data;
  const std::string line(99, 'd');
  while (data.size() < (50u << 20)) data += line + "\n";
  std::string body;
  body.reserve(data.size() * 107 / 100);
  for (size_t at = 0; at < data.size(); at += 100) body += "      " + data.substr(at, 100);
  std::string wf = write_workflow("name: bigrun\nhosts:\n" + host_entry(0) +
                                  "stages:\n  big:\n    host: h1\n    run: |\n      cat > data.txt <<'EOF'\n" + body +
                                  "      EOF\n      echo ran > ran.txt\n");
  auto t0 = std::chrono::steady_clock::now();
  auto r = ferry({"run", wf}, 600);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 0) << r.out.substr(0, 2000) << r.err.substr(0, 2000);
  const bool whole = testing::read_text(workdir("h1") + "/data.txt") == data;
  EXPECT_TRUE(whole) << "the heredoc arrived whole";
  const int drops = count(events("bigrun-1"), "host.disconnected");
  EXPECT_EQ(drops, 0);

  Outcome o;
  o.trial = "a 50 MiB run: command";
  o.succeeded = r.exit_code == 0 && whole && drops == 0;
  o.identical = whole;
  char fig[96];
  std::snprintf(fig, sizeof fig, "ran in %.1f s, %d link drops", took, drops);
  o.figure = fig;
  table().push_back(std::move(o));
}

}  // namespace
}  // namespace ferry::e2e
