#include "jobs/eval/cpu/compute_threads.h"

#include <ATen/Parallel.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <omp.h>
#include <immintrin.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace ferry::eval {
namespace {

// Long enough for the serial work between two regions of a forward (norms, RoPE, a
// residual add, libtorch's dispatch: up to ~100 us a layer of a verify), short against
// a time slice.
constexpr int64_t kDefaultSpinNanos = 200'000;
// How often each thread of a region looks at how long it waited for a CPU, and the
// share of that time above which the machine counts as busy: other threads want the
// cores, and spinning ones would take them from the working threads (the scheduler
// charges the spin to this process, and its threads then wait behind the others for
// their turn). Our own threads wait up to ~11 % on an idle 2-core VM, and more once
// they sleep between regions (a woken thread preempts the one that woke it): at 5 %
// of 20 ms the back-off renewed itself on an idle box, every region paying a futex
// wake-up (~47 context switches a verify). Beside a CPU hog one of them waits ~50-100 %;
// a caller alone sees too little there: its spin kept its core (7 %) while the worker
// starved (98 %).
constexpr int64_t kProbeNanos = 100'000'000;
constexpr int64_t kBusyRunDelayPercent = 25;
// Then every thread waits passively for this long before it spins again.
constexpr int64_t kBackOffNanos = 500'000'000;

std::atomic<int64_t> g_spin_nanos{kDefaultSpinNanos};
std::atomic<int64_t> g_back_off_until{0};

// Moves the back-off's end to `until` unless it is already later: every thread probes,
// and a store of one that read the clock earlier must not cut another's back-off short
// (nor end the "never" of a thread that could not read its file).
void extend_back_off(int64_t until) {
  int64_t seen = g_back_off_until.load(std::memory_order_relaxed);
  while (seen < until && !g_back_off_until.compare_exchange_weak(seen, until, std::memory_order_relaxed)) {
  }
}
thread_local bool t_in_work = false;

int64_t now_nanos() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

uint32_t* futex_word(std::atomic<uint32_t>* word) { return reinterpret_cast<uint32_t*>(word); }

// Returns the word's value once it differs from `seen`: spinning first, within the
// budget, then asleep on a futex (counted in `sleepers`, so a waker skips the syscall
// while everybody spins).
uint32_t await_change(std::atomic<uint32_t>& word, uint32_t seen, std::atomic<int>& sleepers) {
  uint32_t v = word.load(std::memory_order_acquire);
  if (v != seen) return v;
  const int64_t budget = g_spin_nanos.load(std::memory_order_relaxed);
  if (budget > 0) {
    const int64_t start = now_nanos();
    if (start >= g_back_off_until.load(std::memory_order_relaxed)) {
      do {
        for (int i = 0; i < 64; ++i) {
          _mm_pause();
          v = word.load(std::memory_order_acquire);
          if (v != seen) return v;
        }
        // A thread waiting for this CPU (libtorch's OpenMP threads between ours) runs now.
        sched_yield();
      } while (now_nanos() - start < budget);
    }
  }
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  while ((v = word.load(std::memory_order_seq_cst)) == seen) {
    syscall(SYS_futex, futex_word(&word), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
  }
  sleepers.fetch_sub(1, std::memory_order_seq_cst);
  return v;
}

// Every kProbeNanos, the calling thread's wait for a CPU (the second field of
// /proc/thread-self/schedstat: nanoseconds runnable but not running) against the wall
// time since; above kBusyRunDelayPercent, no thread spins for kBackOffNanos. Where the
// file cannot be read, threads never spin.
class RunDelayProbe {
 public:
  ~RunDelayProbe() {
    if (fd_ >= 0) close(fd_);
  }

  void check() {
    const int64_t now = now_nanos();
    if (now - last_wall_ < kProbeNanos) return;
    if (pid_ != getpid()) {  // first use, or a forked child: /proc/thread-self named the parent's thread
      if (fd_ >= 0) close(fd_);
      fd_ = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
      pid_ = getpid();
      last_wall_ = 0;
    }
    char text[128];
    const ssize_t n = fd_ >= 0 ? pread(fd_, text, sizeof(text) - 1, 0) : -1;
    long long ran = 0, waited = 0;
    if (n <= 0 || (text[n] = '\0', std::sscanf(text, "%lld %lld", &ran, &waited) != 2)) {
      extend_back_off(INT64_MAX);
      return;
    }
    if (last_wall_ != 0 && (waited - last_waited_) * 100 > kBusyRunDelayPercent * (now - last_wall_)) {
      extend_back_off(now + kBackOffNanos);
    }
    last_wall_ = now;
    last_waited_ = waited;
  }

 private:
  int fd_ = -1;
  pid_t pid_ = 0;
  int64_t last_wall_ = 0;
  long long last_waited_ = 0;
};

// Each thread's own probe, run by the caller before a region and by a worker after its part.
void probe_run_delay() {
  thread_local RunDelayProbe probe;
  probe.check();
}

// After a seq_cst change of `word`: wakes its sleepers, if any (a sleeper counts itself
// before it checks the word, so one of the two sees the other).
void wake_sleepers(std::atomic<uint32_t>& word, std::atomic<int>& sleepers) {
  if (sleepers.load(std::memory_order_seq_cst) > 0) {
    syscall(SYS_futex, futex_word(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
  }
}

// Regions: the caller stores the work, then moves `region_` (generation and thread
// count in one word, so a worker reads a matching pair in one load); workers wait for
// it to move and run their part; the last to finish moves `finished_`, which the caller
// waits on.
class Workers {
 public:
  // Threads a region can have: the count rides in region_'s low byte.
  static constexpr int64_t kMaxThreads = 255;

  // False when the workers are taken (by another caller), cannot be started, or would
  // be more than kMaxThreads.
  bool run(int64_t threads, const std::function<void(int64_t)>& work) {
    if (threads > kMaxThreads) return false;
    std::unique_lock<std::mutex> lock(busy_, std::try_to_lock);
    if (!lock.owns_lock() || !start_workers(threads - 1)) return false;
    probe_run_delay();
    error_ = nullptr;
    pending_.store(threads - 1, std::memory_order_relaxed);
    work_.store(&work, std::memory_order_relaxed);
    const uint32_t finished = finished_.load(std::memory_order_relaxed);
    const uint32_t next = ((region_.load(std::memory_order_relaxed) >> 8) + 1) << 8 | static_cast<uint32_t>(threads);
    region_.store(next, std::memory_order_seq_cst);  // publishes work_ and pending_ with it
    wake_sleepers(region_, region_sleepers_);
    run_part(work, 0);
    await_change(finished_, finished, finished_sleepers_);
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  bool start_workers(int64_t wanted) {
    try {
      for (; count_ < wanted; ++count_) {
        std::thread(&Workers::worker_main, this, count_ + 1, region_.load()).detach();
      }
    } catch (...) {
      return false;  // the threads started so far wait on, unused until a later run
    }
    return true;
  }

  void run_part(const std::function<void(int64_t)>& work, int64_t index) {
    t_in_work = true;
    try {
      work(index);
    } catch (...) {
      std::lock_guard<std::mutex> guard(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
    t_in_work = false;
  }

  void worker_main(int64_t index, uint32_t seen) {
    for (;;) {
      seen = await_change(region_, seen, region_sleepers_);
      if (index >= static_cast<int64_t>(seen & 0xFF)) continue;  // not in this region
      // The region cannot end before this worker has run, so work_ is this region's.
      run_part(*work_.load(std::memory_order_acquire), index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        finished_.fetch_add(1, std::memory_order_seq_cst);
        wake_sleepers(finished_, finished_sleepers_);
      }
      probe_run_delay();  // after its part is counted: the caller never waits for a probe
    }
  }

  std::mutex busy_;
  int64_t count_ = 0;  // workers started (thread indices 1..count_)
  std::atomic<uint32_t> region_{0};  // generation << 8 | threads of the current region
  std::atomic<uint32_t> finished_{0};
  std::atomic<int> region_sleepers_{0}, finished_sleepers_{0};
  std::atomic<int64_t> pending_{0};  // workers of the current region still running
  std::atomic<const std::function<void(int64_t)>*> work_{nullptr};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

Workers* g_workers = nullptr;

Workers& workers() {
  static const bool made = [] {
    g_workers = new Workers();  // never destroyed: its threads outlive static destructors
    // A forked child has none of the workers, and may have been forked while another
    // thread held a lock: it starts afresh (the parent's object is left behind).
    pthread_atfork(nullptr, nullptr, [] { g_workers = new Workers(); });
    return true;
  }();
  (void)made;
  return *g_workers;
}

}  // namespace

void run_on_threads(int64_t threads, const std::function<void(int64_t)>& work) {
  if (threads > 1 && !t_in_work && workers().run(threads, work)) return;
  for (int64_t i = 0; i < std::max<int64_t>(1, threads); ++i) work(i);
}

int64_t compute_spin_microseconds() { return g_spin_nanos.load(std::memory_order_relaxed) / 1000; }

void set_compute_spin_microseconds(int64_t us) {
  g_spin_nanos.store(std::max<int64_t>(0, us) * 1000, std::memory_order_relaxed);
}

// Chunks per thread below which a parallel region costs more than it saves.
constexpr int64_t kMinChunksPerThread = 2;

void for_each_chunk(int64_t chunks, const std::function<void(int64_t)>& work) {
  const int64_t threads = std::min<int64_t>(at::get_num_threads(), chunks / kMinChunksPerThread);
  if (threads <= 1 || at::in_parallel_region()) {
    for (int64_t c = 0; c < chunks; ++c) work(c);
    return;
  }
  // Each thread starts on a contiguous share of its own: one stream through the
  // weights for the prefetcher, and a counter on a cache line no other thread touches
  // until it runs out (one counter for all cost ~3 % of a verify in cache-line
  // transfers). Then it takes what is left of the other shares, chunk by chunk.
  struct alignas(64) Share {
    std::atomic<int64_t> next;
    int64_t end;
  };
  std::vector<Share> shares(static_cast<size_t>(threads));
  for (int64_t t = 0; t < threads; ++t) {
    shares[t].next.store(t * chunks / threads, std::memory_order_relaxed);
    shares[t].end = (t + 1) * chunks / threads;
  }
  run_on_threads(threads, [&](int64_t thread) {
    for (int64_t k = 0; k < threads; ++k) {
      Share& share = shares[(thread + k) % threads];
      for (int64_t c = share.next.fetch_add(1); c < share.end; c = share.next.fetch_add(1)) work(c);
    }
  });
}

namespace {

std::atomic<int64_t> g_min_split_macs{kDefaultMinSplitMacs};

// An OpenMP OpenBLAS follows omp_get_max_threads(), but once a call large enough to
// split ran at 1 it stays at 1 (its num_cpu_avail() returns early on its own count): so
// after a single-threaded forward its count is put back, when it changed. Setting it
// every time would free and reallocate its per-thread buffers each forward.
void restore_blas_threads(int n) {
  using GetFn = int (*)();
  using SetFn = void (*)(int);
  static const GetFn get = reinterpret_cast<GetFn>(::dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  static const SetFn set = reinterpret_cast<SetFn>(::dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (get != nullptr && set != nullptr && get() != n) set(n);
}

}  // namespace

int64_t min_split_macs() { return g_min_split_macs.load(std::memory_order_relaxed); }

void set_min_split_macs(int64_t macs) { g_min_split_macs.store(std::max<int64_t>(0, macs), std::memory_order_relaxed); }

ThreadsForWork::ThreadsForWork(int64_t macs) {
  if (macs >= min_split_macs() || t_in_work || at::in_parallel_region()) return;
  const int threads = at::get_num_threads();  // first: sets up this thread's count if it has none yet
  if (threads <= 1) return;
  omp_set_num_threads(1);
  restore_ = threads;
}

ThreadsForWork::~ThreadsForWork() {
  if (restore_ == 0) return;
  omp_set_num_threads(restore_);
  restore_blas_threads(restore_);
}

}  // namespace ferry::eval
