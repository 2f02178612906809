#include "jobs/eval/run/tau_spread.h"

#include <algorithm>
#include <cmath>

#include "jobs/eval/run/token_sampler.h"

namespace ferry::eval {
namespace {

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

double sample_sd(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

// The resample means of the percentile bootstrap, sorted.
std::vector<double> bootstrap_means(const std::vector<double>& v) {
  const uint64_t n = v.size();
  std::vector<double> means;
  means.reserve(kBootstrapResamples);
  uint64_t draw = 0;
  for (int k = 0; k < kBootstrapResamples; ++k) {
    double sum = 0;
    for (uint64_t i = 0; i < n; ++i, ++draw) {
      const double u = sampling_uniform(kBootstrapSeed, 0, draw);
      sum += v[std::min(n - 1, static_cast<uint64_t>(u * static_cast<double>(n)))];
    }
    means.push_back(sum / static_cast<double>(n));
  }
  std::sort(means.begin(), means.end());
  return means;
}

}  // namespace

double percentile_of_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = p * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (rank - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

TauSpread tau_spread(const std::vector<double>& values) {
  TauSpread s;
  if (values.empty()) return s;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  s.sd = sample_sd(values);
  s.p10 = percentile_of_sorted(sorted, 0.10);
  s.p50 = percentile_of_sorted(sorted, 0.50);
  s.p90 = percentile_of_sorted(sorted, 0.90);
  const std::vector<double> means = bootstrap_means(values);
  s.ci95_low = percentile_of_sorted(means, 0.025);
  s.ci95_high = percentile_of_sorted(means, 0.975);
  return s;
}

}  // namespace ferry::eval
