// Drafter: what the speculative loop asks of a draft model. Given the committed tokens
// (the last one is the bonus token at position `start`, not yet in the target's
// cache) and the target's features for the positions the drafter has not seen yet,
// it proposes tokens for positions start+1 .. start+block_size-1.
//
// DFlashProposer (dflash_drafter.h) is the real one; tests add fakes with known
// behaviour to check the loop's accounting. One thread at a time.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "base/status.h"

namespace ferry::eval {

struct DraftRequest {
  const std::vector<int64_t>* tokens = nullptr;  // prompt + committed output + bonus; size start+1
  int64_t start = 0;                             // position of the bonus token
  int64_t block_size = 0;
  /// [C, features] target layer outputs for positions [start - C, start): the ones
  /// the drafter has not been given since its last reset().
  at::Tensor context;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  /// Forget all context (new response, or a full recompute).
  virtual void reset() = 0;
  /// Room for `positions` (prompt + output + one block), so a decode allocates no
  /// cache memory per step. Optional.
  virtual void reserve(int64_t /*positions*/) {}
  /// block_size - 1 token ids.
  virtual Result<std::vector<int64_t>> propose(const DraftRequest& request) = 0;
};

}  // namespace ferry::eval
