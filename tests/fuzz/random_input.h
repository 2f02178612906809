// Random inputs for the bounded fuzz tests: valid seeds mutated by a generator
// seeded per round, so any round replays alone (FERRY_FUZZ_SEED, FERRY_FUZZ_ROUND),
// and a watchdog that names the round which crashed, aborted or hung.
//
// Mutations: bit flips, interesting bytes and 32/64-bit words, truncation, deleted
// and repeated ranges, splices of two seeds, huge and negative numbers in text,
// and deep nesting; for JSON also structure-aware edits (a value replaced by one of
// another type, keys dropped or added, deep arrays). Plain values; one thread.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::fuzz {

/// How many rounds a test runs and from which seed: the test's default unless
/// FERRY_FUZZ_ROUNDS / FERRY_FUZZ_SEED say otherwise; FERRY_FUZZ_ROUND=N runs round N only.
struct FuzzPlan {
  uint64_t seed = 1;
  int first = 0;
  int end = 0;  // rounds [first, end)
};
FuzzPlan fuzz_plan(int default_rounds);
/// After a round: true (stop) when the test has failed, naming the round to replay.
bool failed_in_round(const FuzzPlan& plan, int round);
/// Whether the run is long enough to expect both outcomes (taken and refused) often.
inline bool full_run(const FuzzPlan& plan) { return plan.end - plan.first >= 1000; }

/// The generator of one round.
class Mutator {
 public:
  Mutator(uint64_t seed, int round);

  uint64_t next() { return rng_(); }
  /// Uniform in [0, n); 0 when n is 0.
  size_t below(size_t n);
  bool chance(int percent) { return below(100) < static_cast<size_t>(percent); }

  /// 1..4 byte-level edits of `seed`; `others` feed splices.
  std::string mutate_bytes(const std::string& seed, const std::vector<std::string>& others);
  /// 1..3 structure-aware edits of a JSON value.
  nlohmann::json mutate_json(const nlohmann::json& seed);
  /// A value of a random type and an edge-case value: huge and negative numbers,
  /// odd strings (`..`, absolute paths under `sandbox`, controls, long), deep arrays.
  nlohmann::json odd_value();
  /// An interesting integer (0, ±1, powers of two near type limits, INT64_MIN/MAX, UINT64_MAX).
  uint64_t odd_word();

  /// Absolute paths odd_value() makes start here (a test's temp folder), so a
  /// mutated request never names a real system path.
  std::string sandbox = "/nonexistent-fuzz-sandbox";

 private:
  std::mt19937_64 rng_;
};

/// Marks the round under way for the watchdog: a crash, an abort or a round longer
/// than `limit_s` prints "<what> round N (replay: FERRY_FUZZ_SEED=.. FERRY_FUZZ_ROUND=N)"
/// to stderr; the hang also aborts the process.
class RoundGuard {
 public:
  RoundGuard(const char* what, uint64_t seed, int round, double limit_s = 30);
  ~RoundGuard();
  RoundGuard(const RoundGuard&) = delete;
  RoundGuard& operator=(const RoundGuard&) = delete;
};

/// Stands for an array nested `depth` deep inside a value: wire_text() writes it out
/// (a value that deep cannot be copied or dumped by nlohmann::json without
/// recursing that deep, so it exists only as text until a parser reads it).
inline constexpr const char* kDeepMarker = "\x1f" "deep:";
std::string deep_marker(int depth);
/// The value as JSON text, with deep_marker() strings expanded into nesting.
std::string wire_text(const nlohmann::json& value);

}  // namespace ferry::fuzz
