// The loop every mutation test runs, written once: each round of a FuzzPlan under
// a RoundGuard with that round's Mutator, a throw counted as a failure, the first
// failing round named for replay; and the check at the end that a full run reached
// every outcome it must (random_input.h). Plain functions; one thread.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <initializer_list>

#include "tests/fuzz/random_input.h"

namespace ferry::fuzz {

/// Runs `body(Mutator& m, int round)` for each round of `plan`, watched under the name
/// `what`. A reader must answer mutated input with a value or an error, so an
/// exception out of `body` fails the test; the first round that fails stops the loop.
template <typename Body>
void for_each_round(const FuzzPlan& plan, const char* what, Body&& body) {
  for (int round = plan.first; round < plan.end; ++round) {
    RoundGuard guard(what, plan.seed, round);
    Mutator m(plan.seed, round);
    try {
      body(m, round);
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << " threw: " << e.what();
    }
    if (failed_in_round(plan, round)) break;
  }
}

/// How many rounds ended one way, and how many a full run must pass (0: not checked).
struct Outcome {
  const char* name;
  int count;
  int full_run_floor = 0;
};

/// After the loop: in a full run each outcome with a floor is seen more often than
/// it — mutations that only ever load or only ever fail test nothing. Prints
/// "<what>: <name> <count>, ..." either way.
void expect_outcomes(const FuzzPlan& plan, const char* what, std::initializer_list<Outcome> outcomes);

}  // namespace ferry::fuzz
