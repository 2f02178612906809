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

}  // namespace ferry::eval
