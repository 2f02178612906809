// The eval kernels' own worker threads (packed matmuls, attention): a parallel region
// that starts in ~3 us instead of libgomp's ~20 us.
//
// Why not at::parallel_for: libtorch's OpenMP threads wait passively (a futex) between
// regions, because spinning ones took the cores from the working ones on a busy host
// (jobs/eval/README.md, "Threads"). But a forward runs ~6 regions a layer with a few
// to ~100 us of serial work between them, and waking a sleeping thread costs ~20 us on
// this VM (its vCPU halts; measured: 21 us a region passive, 3 us spinning). These
// threads spin up to 200 us after a region (yielding the CPU every few microseconds to
// any thread that waits for it, such as libtorch's own), then sleep. Where the machine
// is busy (one of the threads finds it waited for a CPU more than 25 % of the last
// 100 ms: other threads want the cores), nobody spins for 0.5 s: a busy host gets
// libgomp's passive behaviour back.
#pragma once

#include <cstdint>
#include <functional>

namespace ferry::eval {

/// Runs work(thread) for thread in [0, threads) at once, the caller as thread 0 and
/// workers kept for the purpose as the rest; returns when every call has returned.
/// Inline, one thread after another, when threads <= 1 or > 255, when called from
/// inside such a work call, or when another caller is using the workers. The first exception a
/// call throws is rethrown here after all have returned.
void run_on_threads(int64_t threads, const std::function<void(int64_t thread)>& work);

/// How long a thread spins for the next region (or for the others to finish) before
/// it sleeps, in microseconds; 0: never spin (as libgomp's passive policy). For
/// benchmarks and tests.
void set_compute_spin_microseconds(int64_t us);
int64_t compute_spin_microseconds();

/// Runs work(c) for every c in [0, chunks) on as many threads as libtorch's (the eval's
/// own, compute_threads.h; inline when there are too few chunks to share or already
/// inside a parallel region). Each thread starts on a contiguous share of the chunks,
/// then takes what is left of the others' shares one chunk at a time: on a host where
/// other work runs, a thread that loses its core for a time slice would otherwise hold
/// the others at the end.
void for_each_chunk(int64_t chunks, const std::function<void(int64_t)>& work);

/// Multiply-adds (weights x rows, plus attention's) below which a forward runs on one
/// thread: handing its small regions to a second thread costs more than it saves.
/// Measured (`eval_bench --only sweep`, docs/benchmarks.md, issue 45): 8-layer Qwen3
/// shapes from hidden 64 to 1,024, every forward split, 1 and 2 threads in turn, three
/// float32 sweeps on this shared 2-core VM: below 11 M multiply-adds (hidden 64-384 at 1
/// token, 64 at 16) a second thread lost in every run (1.1-2.8x as long); from 11 M to
/// 32 M in 5 of 6; above, it won or lost with the machine's load. BF16 lost below 20 M
/// in every run. The dense Qwen3 shape (154 M a token) keeps its 2 threads.
inline constexpr int64_t kDefaultMinSplitMacs = 32'000'000;
/// The threshold in effect (0: every forward may split, as before issue 45). For
/// benchmarks and tests.
int64_t min_split_macs();
void set_min_split_macs(int64_t macs);

/// Scoped to one forward of `macs` multiply-adds: below min_split_macs(), the calling
/// thread's compute threads (libtorch's OpenMP regions, OpenBLAS, for_each_chunk, all of
/// which read at::get_num_threads()) are 1 until the guard ends, then what they were.
/// A thread-local setting (omp_set_num_threads on this thread); only an OpenMP OpenBLAS
/// that dropped its own count to 1 meanwhile is set back, process-wide. Nested guards and
/// guards inside a parallel region leave things as they are.
class ThreadsForWork {
 public:
  explicit ThreadsForWork(int64_t macs);
  ~ThreadsForWork();
  ThreadsForWork(const ThreadsForWork&) = delete;
  ThreadsForWork& operator=(const ThreadsForWork&) = delete;
  /// Whether this guard made the forward run on one thread.
  bool single() const { return restore_ > 0; }

 private:
  int restore_ = 0;  // the count to set back, 0: nothing changed
};

}  // namespace ferry::eval
