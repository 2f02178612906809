// SlurmQueue (agents/slurm_job.h) against a fake `squeue` first on PATH that is
// slow and fails, as a client does while slurmctld is down (review-4 P5): a listing
// is due again only a while after the last one *returned*, that while doubles after
// each failure up to a bound, and a good listing brings back the normal poll.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "agents/slurm_job.h"
#include "base/clock.h"
#include "tests/support/process.h"

namespace ferry {
namespace {

using testing::read_text;
using testing::TempDir;
using testing::write_text;

class SlurmQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* path = std::getenv("PATH");
    old_path_ = path ? path : "/usr/bin:/bin";
    // Each call logs when it started; it answers after `slow` seconds, with a listing once `ok` exists.
    write_text(dir_.file("squeue"), "#!/bin/sh\necho \"$(date +%s.%N) $*\" >> " + dir_.file("calls") +
                                        "\nsleep $(cat " + dir_.file("slow") + ")\necho \"$(date +%s.%N)\" >> " +
                                        dir_.file("ends") + "\nif [ -f " + dir_.file("ok") +
                                        " ]; then echo '7|RUNNING|None|job7'; exit 0; fi\n"
                                        "echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1\n");
    ::chmod(dir_.file("squeue").c_str(), 0755);
    write_text(dir_.file("slow"), "0.5");
    ::setenv("PATH", (dir_.path() + ":" + old_path_).c_str(), 1);
  }
  void TearDown() override { ::setenv("PATH", old_path_.c_str(), 1); }

  // The start times of the calls so far, in seconds; with "ends", when each one's wait ended.
  std::vector<double> times(const std::string& file = "calls") {
    std::vector<double> t;
    std::istringstream in(read_text(dir_.file(file)));
    for (std::string line; std::getline(in, line);) t.push_back(std::atof(line.c_str()));
    return t;
  }
  // Asks about the job as the coordinator's polls do, until the queue has run `n` listings.
  bool ask_until_polls(SlurmQueue& q, int n) {
    return testing::wait_until(
        [&] {
          (void)q.state("7", "job7");
          return q.polls() >= n;
        },
        std::chrono::seconds(20));
  }

  TempDir dir_;
  std::string old_path_;
};

TEST_F(SlurmQueueTest, AFailingListingIsNotRepeatedAtOnceAndBacksOffDoublingToABound) {
  SlurmQueue q(SlurmQueue::Timing{0.2, 5, 1.0});
  EXPECT_EQ(q.state("7", "job7").state, "");
  EXPECT_EQ(q.polls(), 1);
  EXPECT_NEAR(q.wait_s(), 0.4, 1e-6) << "twice the poll interval after a failure";
  // The listing took 0.5 s, longer than the poll interval: the next question is answered from the cache.
  EXPECT_EQ(q.state("7", "job7").state, "");
  EXPECT_EQ(q.polls(), 1) << "a listing that failed after 0.5 s ran again at once";
  ASSERT_TRUE(ask_until_polls(q, 2));
  EXPECT_NEAR(q.wait_s(), 0.8, 1e-6);
  ASSERT_TRUE(ask_until_polls(q, 3));
  EXPECT_NEAR(q.wait_s(), 1.0, 1e-6) << "the wait is bounded by max_backoff_s";
  ASSERT_TRUE(ask_until_polls(q, 4));
  EXPECT_NEAR(q.wait_s(), 1.0, 1e-6);
  auto t = times();
  auto end = times("ends");
  ASSERT_EQ(t.size(), 4u);
  ASSERT_GE(end.size(), 3u);
  // The waits were kept, from each failed listing's end (a loaded machine's slow sleep
  // does not count). Only lower bounds: how late a process starts is the machine's.
  EXPECT_GE(t[1] - end[0], 0.38);
  EXPECT_GE(t[2] - end[1], 0.78);
  EXPECT_GE(t[3] - end[2], 0.98);
  EXPECT_NE(read_text(dir_.file("calls")).find(" --me "), std::string::npos) << "our own jobs only";
  // Slurm answers again: the job's state, and the normal interval after it.
  write_text(dir_.file("ok"), "");
  ASSERT_TRUE(ask_until_polls(q, 5));
  EXPECT_EQ(q.state("7", "job7").state, "RUNNING");
  EXPECT_NEAR(q.wait_s(), 0.2, 1e-6) << "a good listing resets the backoff";
  ASSERT_TRUE(ask_until_polls(q, 6));
  t = times();
  end = times("ends");
  ASSERT_GE(end.size(), 5u);
  EXPECT_GE(t[5] - end[4], 0.18);
}

TEST_F(SlurmQueueTest, AListingThatTimesOutKeepsTheAgentFreeUntilTheBackoffEnds) {
  write_text(dir_.file("slow"), "30");
  SlurmQueue q(SlurmQueue::Timing{0.2, 0.5, 10});
  double before = mono_s();
  EXPECT_EQ(q.state("7", "job7").state, "");
  const double took = mono_s() - before;
  EXPECT_LT(took, 5.0) << "the client's own deadline";
  before = mono_s();
  for (int i = 0; i < 20; ++i) (void)q.state("7", "job7");
  EXPECT_EQ(q.polls(), 1);
  EXPECT_LT(mono_s() - before, 2.0) << "questions after a timed-out listing wait for nothing (a listing each: 10 s)";
}

}  // namespace
}  // namespace ferry
