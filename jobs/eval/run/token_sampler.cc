#include "jobs/eval/run/token_sampler.h"

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace ferry::eval {
namespace {

constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ULL;

}  // namespace

std::string Sampling::regime() const {
  if (greedy()) return "greedy";
  // Shortest form that reads back as the same number, with a decimal point: "1.0", "0.7".
  char t[40];
  std::snprintf(t, sizeof t, "%.15g", temperature);
  std::string text = t;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return "T = " + text + ", seed " + std::to_string(seed);
}

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double sampling_uniform(uint64_t seed, uint64_t response, uint64_t position) {
  const uint64_t counter = (response << 32) + position + 1;  // all mod 2^64
  return static_cast<double>(splitmix64(seed + kGoldenGamma * counter) >> 11) * 0x1.0p-53;
}

int64_t sample_token(const float* logits, int64_t n, double temperature, double u) {
  assert(n >= 1 && temperature > 0);
  double max = logits[0];
  for (int64_t i = 1; i < n; ++i) max = std::fmax(max, static_cast<double>(logits[i]));
  // One pass for the total, a second for the cumulative sum: the same additions in the
  // same order, so the last cumulative value is the total and some id always qualifies.
  thread_local std::vector<double> weights;
  weights.resize(static_cast<size_t>(n));
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    weights[static_cast<size_t>(i)] = std::exp((static_cast<double>(logits[i]) - max) / temperature);
    total += weights[static_cast<size_t>(i)];
  }
  const double threshold = u * total;
  double cumulative = 0;
  for (int64_t i = 0; i < n; ++i) {
    cumulative += weights[static_cast<size_t>(i)];
    if (cumulative > threshold) return i;
  }
  return n - 1;  // unreachable for u < 1 and finite logits; NaN logits land here
}

}  // namespace ferry::eval
