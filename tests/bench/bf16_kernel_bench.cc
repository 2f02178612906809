// bf16_kernel_bench: how close ferry's BF16 matmul kernels run to this CPU's arithmetic
// peak (issue 12). Per core, in thread CPU time (steady on a shared host):
//  * the peak: vdpbf16ps on 16 independent register sums, nothing loaded (64 FLOP each);
//  * for the Qwen3-shaped projections of eval_bench (hidden 1024, MLP 4096, 16 q / 8 kv
//    heads of 128), x of --rows rows: the packed kernel (packed_bf16_linear), the
//    checkpoint-layout kernel (bf16_linear), libtorch's at::linear (oneDNN) — GFLOP/s
//    and the share of the peak; one row: weight GB/s;
//  * one row against a 128 MiB matrix (past the LLC, a decode step's case): weight bytes
//    per CPU second and per wall second, each layout.
// Medians of --reps. Prints figures; not a timed test.
//
//   bf16_kernel_bench [--rows N] [--reps N] [--threads N]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/cpu/packed_bf16_linear.h"
#include "jobs/eval/tools/passive_omp_wait.h"

namespace {

using namespace ferry::eval;

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double wall_seconds() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// vdpbf16ps per CPU second of one thread, on 16 chains (latency hidden).
__attribute__((target("avx512f,avx512bf16"))) double peak_instructions_per_cpu_second() {
  constexpr int64_t kIters = 20'000'000;
  __m512 acc[16];
#pragma GCC unroll 16
  for (int r = 0; r < 16; ++r) acc[r] = _mm512_setzero_ps();
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3c00), b = (__m512bh)_mm512_set1_epi16(0x0100);
  timespec t0{}, t1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  for (int64_t i = 0; i < kIters; ++i) {
#pragma GCC unroll 16
    for (int r = 0; r < 16; ++r) acc[r] = _mm512_dpbf16_ps(acc[r], a, b);
    // Opaque to the compiler: the 16 chains stay 16 (it would merge equal ones).
    __asm__("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]), "+v"(acc[4]), "+v"(acc[5]), "+v"(acc[6]),
            "+v"(acc[7]));
    __asm__("" : "+v"(acc[8]), "+v"(acc[9]), "+v"(acc[10]), "+v"(acc[11]), "+v"(acc[12]), "+v"(acc[13]),
            "+v"(acc[14]), "+v"(acc[15]));
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  __m512 total = acc[0];  // used, so the loop stays; summed without taking acc's address
#pragma GCC unroll 16
  for (int r = 1; r < 16; ++r) total = _mm512_add_ps(total, acc[r]);
  float lanes[16];
  _mm512_storeu_ps(lanes, total);  // not _mm512_reduce_add_ps: GCC 12 warns inside it (bug 105593)
  if (lanes[0] == 1.2345f) std::printf(" ");
  const double s = static_cast<double>(t1.tv_sec - t0.tv_sec) + 1e-9 * static_cast<double>(t1.tv_nsec - t0.tv_nsec);
  return 16.0 * kIters / s;
}

struct Timing {
  double wall = 0, cpu = 0;
};

// Per call; each rep times a batch of calls (one is 10-500 us, too short to time alone).
Timing time_median(int reps, const std::function<void()>& fn) {
  constexpr int kCallsPerRep = 20;
  fn();  // warm
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    const double w0 = wall_seconds(), c0 = process_cpu_seconds();
    for (int i = 0; i < kCallsPerRep; ++i) fn();
    wall.push_back((wall_seconds() - w0) / kCallsPerRep);
    cpu.push_back((process_cpu_seconds() - c0) / kCallsPerRep);
  }
  return {median(wall), median(cpu)};
}

}  // namespace

int main(int argc, char** argv) {
  reexec_with_passive_omp_wait(argv);  // as `ferry eval` runs: no spinning threads in the CPU time
  int64_t rows = 16;
  int reps = 21, threads = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rows" && i + 1 < argc) rows = std::atoll(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bf16_kernel_bench [--rows N] [--reps N] [--threads N]\n");
      return 2;
    }
  }
  if (!bf16_kernel_supported()) {
    std::printf("this CPU has no AVX512-BF16: nothing to measure\n");
    return 0;
  }
  at::set_num_threads(threads);
  std::vector<double> peaks;
  for (int r = 0; r < 3; ++r) peaks.push_back(peak_instructions_per_cpu_second());
  const double peak_gflops = 64.0 * median(peaks) / 1e9;
  std::printf("vdpbf16ps peak per core: %.2f G/s = %.0f GFLOP/s per CPU second (%d threads: %.0f)\n",
              median(peaks) / 1e9, peak_gflops, threads, threads * peak_gflops);

  struct Shape {
    const char* name;
    int64_t n, k;
  };
  const Shape shapes[] = {{"q_proj", 2048, 1024}, {"k_proj", 1024, 1024}, {"o_proj", 1024, 2048},
                          {"gate_proj", 4096, 1024}, {"down_proj", 1024, 4096}};
  std::printf("\n%lld rows, %d threads, medians of %d; GFLOP/s per CPU second (share of the peak), wall GFLOP/s\n",
              static_cast<long long>(rows), threads, reps);
  std::printf(
      "| matrix | packed | checkpoint layout | libtorch | 1 row packed: GB/s wall |\n| --- | ---: | ---: | ---: | ---: "
      "|\n");
  for (const Shape& s : shapes) {
    at::manual_seed(1);
    const at::Tensor w = at::randn({s.n, s.k}).to(at::kBFloat16), x = at::randn({rows, s.k}).to(at::kBFloat16);
    const at::Tensor packed = pack_bf16_weight(w), x1 = x.narrow(0, 0, 1).contiguous();
    const double flop = 2.0 * rows * s.n * s.k;
    auto cell = [&](const Timing& t) {
      char b[64];
      std::snprintf(b, sizeof b, "%.0f (%.0f%%), wall %.0f", flop / t.cpu / 1e9, 100 * flop / t.cpu / 1e9 / peak_gflops,
                    flop / t.wall / 1e9);
      return std::string(b);
    };
    const Timing p = time_median(reps, [&] { packed_bf16_linear(x, packed); });
    const Timing c = time_median(reps, [&] { bf16_linear(x, w); });
    set_bf16_kernel_enabled(false);
    const Timing l = time_median(reps, [&] { at::linear(x, w); });
    set_bf16_kernel_enabled(true);
    const Timing one = time_median(reps, [&] { packed_bf16_linear(x1, packed); });
    std::printf("| %s [%lld, %lld] | %s | %s | %s | %.1f |\n", s.name, static_cast<long long>(s.n),
                static_cast<long long>(s.k), cell(p).c_str(), cell(c).c_str(), cell(l).c_str(),
                2.0 * s.n * s.k / one.wall / 1e9);
  }

  // One row against weights far past the last-level cache (a decode step's case): bytes
  // of weights read per CPU second and per wall second, both layouts side by side.
  {
    constexpr int64_t kN = 64 * 1024, kK = 1024;  // 128 MiB
    at::manual_seed(2);
    const at::Tensor w = at::randn({kN, kK}).to(at::kBFloat16), x = at::randn({1, kK}).to(at::kBFloat16);
    const at::Tensor packed = pack_bf16_weight(w);
    const double bytes = 2.0 * kN * kK;
    const Timing p = time_median(reps, [&] { packed_bf16_linear(x, packed); });
    const Timing c = time_median(reps, [&] { bf16_linear(x, w); });
    set_bf16_kernel_enabled(false);
    const Timing l = time_median(reps, [&] { at::linear(x, w); });
    set_bf16_kernel_enabled(true);
    std::printf("\none row, [%lld, %lld] (%.0f MB, past the LLC), %d threads: GB/s per CPU second (wall): packed %.1f "
                "(%.1f), checkpoint layout %.1f (%.1f), libtorch %.1f (%.1f)\n",
                static_cast<long long>(kN), static_cast<long long>(kK), bytes / 1e6, threads, bytes / p.cpu / 1e9,
                bytes / p.wall / 1e9, bytes / c.cpu / 1e9, bytes / c.wall / 1e9, bytes / l.cpu / 1e9,
                bytes / l.wall / 1e9);
    // The same matrix against a block of rows (a verify's case): the packed kernel must
    // compute at its in-cache rate while it streams the weights from memory.
    const at::Tensor xs = at::randn({rows, kK}).to(at::kBFloat16);
    const double flop = 2.0 * rows * kN * kK;
    const Timing b = time_median(reps, [&] { packed_bf16_linear(xs, packed); });
    std::printf("%lld rows, the same matrix, packed: %.0f GFLOP/s per CPU second (%.0f%% of the peak), wall %.0f\n",
                static_cast<long long>(rows), flop / b.cpu / 1e9, 100 * flop / b.cpu / 1e9 / peak_gflops,
                flop / b.wall / 1e9);
  }
  return 0;
}
