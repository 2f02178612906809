// The eval's worker threads (compute_threads.h): every thread index runs once per
// region, all of them at the same time; exceptions reach the caller; nested calls and
// a forked child still work; spinning or not, the same work gets done.
#include "jobs/eval/cpu/compute_threads.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ferry::eval {
namespace {

// Each thread of a region arrives and waits (at most 10 s) for all of them: true only
// if the region's calls really run at once, on distinct threads.
bool all_run_at_once(int64_t threads) {
  std::atomic<int64_t> arrived{0};
  std::atomic<int64_t> met{0};
  std::vector<std::thread::id> ids(static_cast<size_t>(threads));
  std::vector<int> runs(static_cast<size_t>(threads), 0);
  run_on_threads(threads, [&](int64_t i) {
    ids[static_cast<size_t>(i)] = std::this_thread::get_id();
    ++runs[static_cast<size_t>(i)];
    arrived.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (arrived.load() < threads && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    if (arrived.load() == threads) met.fetch_add(1);
  });
  const std::set<std::thread::id> distinct(ids.begin(), ids.end());
  bool once = true;
  for (int r : runs) once = once && r == 1;
  return once && met.load() == threads && static_cast<int64_t>(distinct.size()) == threads &&
         ids[0] == std::this_thread::get_id();
}

TEST(ComputeThreadsTest, EveryThreadRunsOnceAndAllAtOnce) {
  for (int64_t threads : {2, 3, 4}) EXPECT_TRUE(all_run_at_once(threads)) << threads;
}

TEST(ComputeThreadsTest, RegionsOfChangingSizesEachRunEveryIndexOnce) {
  // A worker that sits a region out must not run the next one twice (or miss it). Every
  // round's counters and work live to the end, so a late second run of a round's work
  // is counted in that round's slots, not written into freed memory.
  constexpr int kRounds = 4000;
  const int64_t sizes[] = {4, 2, 1, 3, 2, 4, 3};
  std::vector<std::array<std::atomic<int>, 4>> runs(kRounds);
  std::vector<std::function<void(int64_t)>> works;
  works.reserve(kRounds);
  for (int round = 0; round < kRounds; ++round) {
    works.emplace_back(
        [&runs, round](int64_t i) { runs[static_cast<size_t>(round)][static_cast<size_t>(i)].fetch_add(1); });
  }
  for (int round = 0; round < kRounds; ++round) run_on_threads(sizes[round % 7], works[static_cast<size_t>(round)]);
  run_on_threads(4, [](int64_t) {});  // one more region: a stray run of the last round lands before the check
  for (int round = 0; round < kRounds; ++round) {
    const int64_t threads = sizes[round % 7];
    for (int64_t i = 0; i < 4; ++i) {
      ASSERT_EQ(runs[static_cast<size_t>(round)][static_cast<size_t>(i)].load(), i < threads ? 1 : 0)
          << "round " << round << ", index " << i;
    }
  }
}

TEST(ComputeThreadsTest, AnExceptionReachesTheCallerAndTheWorkersStayUsable) {
  EXPECT_THROW(run_on_threads(2,
                              [](int64_t i) {
                                if (i == 1) throw std::runtime_error("worker failed");
                              }),
               std::runtime_error);
  EXPECT_TRUE(all_run_at_once(2));
}

TEST(ComputeThreadsTest, ANestedCallRunsOnTheCallingThread) {
  std::atomic<int> inner_elsewhere{0}, inner_runs{0};
  run_on_threads(2, [&](int64_t) {
    const std::thread::id outer = std::this_thread::get_id();
    run_on_threads(2, [&](int64_t) {
      inner_runs.fetch_add(1);
      if (std::this_thread::get_id() != outer) inner_elsewhere.fetch_add(1);
    });
  });
  EXPECT_EQ(inner_runs.load(), 4);
  EXPECT_EQ(inner_elsewhere.load(), 0);
}

TEST(ComputeThreadsTest, SpinningOrNotTheSameWorkGetsDone) {
  const int64_t before = compute_spin_microseconds();
  for (int64_t spin : {int64_t{0}, int64_t{200}}) {
    set_compute_spin_microseconds(spin);
    std::atomic<int64_t> sum{0};
    for (int round = 0; round < 500; ++round) run_on_threads(2, [&](int64_t i) { sum.fetch_add(i + 1); });
    EXPECT_EQ(sum.load(), 500 * 3) << "spin " << spin << " us";
    EXPECT_TRUE(all_run_at_once(2)) << "spin " << spin << " us";
  }
  set_compute_spin_microseconds(before);
}

TEST(ComputeThreadsTest, AForkedChildGetsWorkersOfItsOwn) {
  ASSERT_TRUE(all_run_at_once(2));  // the parent's workers exist
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    alarm(20);  // a child stuck waiting on its parent's (absent) workers dies, and fails
    _exit(all_run_at_once(2) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

}  // namespace
}  // namespace ferry::eval
