// How much a τ from a handful of prompts can be trusted (issue 43): the spread of the
// per-response τ values (each response's mean acceptance length) across responses.
// Computed from the response values alone, in prompt order, so a sharded eval's merge
// (which joins those values in order) recomputes exactly what the whole eval has.
// Method, as the report's JSON documents it (kTauSpreadMethod):
//  * sd: sample standard deviation (n - 1 in the denominator; 0 for n < 2);
//  * p10/p50/p90: linear interpolation between order statistics at rank p * (n - 1)
//    (NumPy's default "linear" percentile);
//  * ci95: percentile bootstrap of the mean: kBootstrapResamples resamples of n values
//    drawn with replacement, index = floor(u * n) with u the 53-bit uniform of
//    splitmix64(kBootstrapSeed + 0x9E3779B97F4A7C15 * (k + 1)), k counting draws from 0
//    across all resamples in order; the interval is the 2.5th and 97.5th percentiles of
//    the resample means (same interpolation).
// Plain functions; any thread.
#pragma once

#include <cstdint>
#include <vector>

namespace ferry::eval {

inline constexpr int kBootstrapResamples = 2000;
inline constexpr uint64_t kBootstrapSeed = 43;
inline constexpr const char* kTauSpreadMethod =
    "sd: sample (n-1); p10/p50/p90: linear interpolation at rank p*(n-1); ci95: percentile bootstrap of the mean, "
    "2000 resamples, indices floor(u*n) from splitmix64(43 + 0x9E3779B97F4A7C15*(k+1)), k = draw count";

struct TauSpread {
  double sd = 0;
  double p10 = 0, p50 = 0, p90 = 0;
  double ci95_low = 0, ci95_high = 0;  // 95 % bootstrap interval of τ (the mean)
};

/// The spread of `values` (per-response τ, in prompt order); all zero when empty.
TauSpread tau_spread(const std::vector<double>& values);

/// Linear-interpolation percentile (0 <= p <= 1) of sorted values; 0 when empty.
double percentile_of_sorted(const std::vector<double>& sorted, double p);

}  // namespace ferry::eval
