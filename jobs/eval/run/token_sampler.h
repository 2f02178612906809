// The target's token at temperature T > 0, reproducible by construction (issue 43): the
// uniform number for response r (0-based prompt index in file order) and generated
// position p (0-based) is a pure function of (seed, r, p), and the token is found by
// one float64 cumulative sum over the logits row. So plain decoding and speculative
// decoding draw the same token at the same position, whichever forward produced the
// row, and shards that know each prompt's global index draw what the whole eval draws.
// T = 0 is greedy and never calls this (the loop keeps its argmax). Torch-free plain
// functions; any thread.
#pragma once

#include <cstdint>
#include <string>

namespace ferry::eval {

/// How the target's tokens are chosen: greedy (temperature 0) or sampled from
/// softmax(logits / temperature) with the uniforms of `seed`.
struct Sampling {
  double temperature = 0;
  uint64_t seed = 0;

  bool greedy() const { return temperature <= 0; }
  /// "greedy", or "T = 1.0, seed 7": how reports name the regime.
  std::string regime() const;
};

/// The standard splitmix64 finalizer (Steele, Lea, Flood 2014): the generator's output
/// once its state, advanced by 0x9E3779B97F4A7C15 a step, is x.
uint64_t splitmix64(uint64_t x);

/// u in [0, 1) for response r and generated position p:
/// (splitmix64(seed + 0x9E3779B97F4A7C15 * (r * 2^32 + p + 1)) >> 11) * 2^-53, mod 2^64.
double sampling_uniform(uint64_t seed, uint64_t response, uint64_t position);

/// The smallest id i whose cumulative sum of exp((l_j - max l) / temperature) over ids
/// 0..i, in float64, exceeds u times the total. temperature > 0, n >= 1.
int64_t sample_token(const float* logits, int64_t n, double temperature, double u);

}  // namespace ferry::eval
