// Helpers shared by the eval tests and the eval benchmark: scratch folders and the
// standard tiny models (all written by jobs/eval/tools/tiny_models, seeded, so every
// run sees the same numbers). No gtest, no libtorch here.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/run/eval_spec.h"
#include "jobs/eval/tools/tiny_models.h"
#include "tests/support/process.h"

namespace ferry::eval::testing {

/// A fresh folder under $TMPDIR (or /tmp), removed by the destructor.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Random Qwen3 target: vocab 320 (byte-level prompts work), hidden 64, 4 layers,
/// 4 query / 2 kv heads of 16.
TinyTargetSpec random_target_spec(uint64_t seed = 11);
/// A DFlash drafter for random_target_spec(): 2 layers reading target layers {1, 3}.
TinyDrafterSpec random_drafter_spec(uint64_t seed = 12, int64_t block_size = 16);
/// Oracle target (small_oracle_target_spec, 3 layers): period 1 = always predicts the
/// fixed token; period > 1 = only for some tokens.
TinyTargetSpec oracle_target_spec(int64_t period);
/// agree / disagree drafter for oracle_target_spec().
TinyDrafterSpec oracle_drafter_spec(const std::string& kind, int64_t block_size = 16);

/// Random Qwen3.5 hybrid target: vocab 320, hidden 64, 4 layers (linear, linear,
/// linear, full: Hugging Face's every-4th rule), gated attention 4 / 2 heads of 16 with
/// a quarter rotated, GDN 2 key / 4 value heads of 8, conv kernel 4.
TinyTargetSpec hybrid_target_spec(uint64_t seed = 41);
/// Oracle hybrid target (vocab 64 in hidden 96), layers linear, full, linear, linear;
/// the agree / disagree drafters of oracle_drafter_spec() read layers {1, 3} of it.
TinyTargetSpec hybrid_oracle_target_spec(int64_t period);
TinyDrafterSpec hybrid_oracle_drafter_spec(const std::string& kind, int64_t block_size = 16);

/// The speculative decoding tests' models in `dir`: random/ with random-drafter/; the
/// oracle targets of period 1 and 3 (oracle-const/, oracle-mixed/) with the agree/ and
/// disagree/ drafters; and their Qwen3.5 hybrid twins (hybrid-random/, hybrid-const/,
/// hybrid-mixed/, hybrid-agree/, hybrid-disagree/).
Status write_decoding_models(const std::string& dir);

/// The oracle target of `period` in `dir`/target with the agree and disagree drafters of
/// block 8 in `dir`/agree and `dir`/disagree.
Status write_oracle_models(const std::string& dir, int64_t period);

/// The models of the sharding tests' eval in `dir`: target/ (the oracle target of
/// period 3, so τ varies from prompt to prompt), drafter/ (the agreeing drafter) and
/// reference/ (the disagreeing one), block 16.
Status write_oracle_eval_models(const std::string& dir);
/// An eval of those models in `dir` (16 new tokens, 1 thread) as shard `index` of
/// `count`; the prompts are the caller's to set.
EvalSpec oracle_eval_spec(const std::string& dir, int index = 0, int count = 1);

/// `count` prompts of ids < vocab, deterministic.
std::vector<std::vector<int64_t>> make_prompts(int count, int64_t vocab, int min_len, int max_len, uint64_t seed);

/// Overwrites the bytes of every tensor of `folder`/model.safetensors that `which`
/// names with 0xff (NaN in F32); returns how many tensors. Throws on I/O errors.
int overwrite_tensor_bytes(const std::string& folder, const std::function<bool(const std::string&)>& which);
/// Splits `folder`/model.safetensors (F32) into two shards: the tensors `second`
/// names go to shard 2, the rest to shard 1, with an index. Throws on errors.
void split_checkpoint_in_two(const std::string& folder, const std::function<bool(const std::string&)>& second);

/// Whole-file reads and writes: the shared test support's (tests/support/process.h).
using ferry::testing::read_text;
using ferry::testing::write_text;

}  // namespace ferry::eval::testing
