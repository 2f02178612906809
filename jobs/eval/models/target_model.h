// TargetModel: what the speculative loop and the DFlash proposer ask of a target —
// Qwen3 dense (qwen3_target.h) or the Qwen3.5/3.6 hybrid (qwen35_target.h).
//
// forward() runs the next tokens after what the model's state holds and returns their
// logits and the raw outputs of the requested decoder layers (Hugging Face's
// hidden_states[layer + 1]; for the last layer that slot is the final-normed output).
// crop() is the rollback after a verify: the state afterwards equals having run exactly
// the first `length` positions. Any length is allowed down to where the last forward
// began (a hybrid target replays its recurrent state there); 0 always works.
// Batch size 1; one thread at a time; methods may throw c10::Error (eval_runner catches).
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/cpu/tensor_ops.h"
#include "jobs/eval/io/decoder_config.h"
#include "jobs/eval/io/load_report.h"

namespace ferry::eval {

class TargetModel {
 public:
  struct Output {
    at::Tensor logits;    // [rows, vocab], compute dtype (argmax needs no float32 copy): the last `rows` positions
    at::Tensor features;  // [T, len(capture) * hidden]: requested layer outputs, concatenated in order
  };
  virtual ~TargetModel() = default;

  /// Dimensions shared by every kind (vocab, hidden, layer count, eos ids).
  virtual const DecoderConfig& config() const = 0;
  virtual const ComputeOptions& options() const = 0;
  /// Architecture and layer mix, e.g. "qwen3_5: 48 linear + 16 full attention".
  virtual std::string describe() const = 0;

  /// ids: [T] int64 -> [T, hidden]
  virtual at::Tensor embed(const at::Tensor& ids) const = 0;
  /// hidden: [T, hidden] (already final-normed) -> [T, vocab]
  virtual at::Tensor lm_head(const at::Tensor& hidden) const = 0;

  /// Runs ids: [T] at positions cache_length() .. cache_length()+T-1.
  /// logits_rows < 0: logits for every position; else for the last logits_rows.
  /// capture: 0-based layer ids whose outputs make `features`.
  virtual Output forward(const at::Tensor& ids, const std::vector<int64_t>& capture, int64_t logits_rows = -1) = 0;

  virtual int64_t cache_length() const = 0;
  /// Allocates per-response state for `positions` up front, so a decode loop allocates
  /// nothing per step. Optional: a target that does not gains nothing from it.
  virtual void reserve(int64_t positions) { (void)positions; }
  /// Keeps positions [0, length); see the class comment for which lengths work.
  virtual void crop(int64_t length) = 0;
  virtual void reset() = 0;

  /// Refuses prompts this target cannot run as text (e.g. vision placeholder ids).
  virtual Status check_prompt(const std::vector<int64_t>& prompt) const {
    (void)prompt;
    return Status();
  }
};

/// The end of a forward over `x` (its last layer's output, [T, hidden]): logits of the
/// last `logits_rows` rows (every row when < 0) through `final_norm` and lm_head, and the
/// captured layer outputs side by side.
template <typename FinalNorm>
TargetModel::Output forward_output(const TargetModel& target, const at::Tensor& x, int64_t logits_rows,
                                   const std::vector<at::Tensor>& captured, FinalNorm final_norm) {
  const int64_t t = x.size(0);
  TargetModel::Output out;
  at::Tensor last = logits_rows >= 0 && logits_rows < t ? x.narrow(0, t - logits_rows, logits_rows) : x;
  out.logits = target.lm_head(final_norm(last));
  if (!captured.empty()) out.features = at::cat(captured, -1);
  return out;
}

/// Most positions one forward() of prefill() runs. A forward's temporaries grow with its
/// rows: chunks keep a long prompt's within those of 64 rows. Measured on eval_bench's
/// target (hidden 1,024, MLP 4,096): its 256-token prefill raises the peak by ~11 MB in
/// chunks of 64 and ~18 MB in chunks of 128: peak RSS 1.10x the weights against
/// 1.12-1.13x (goal <= 1.15x); the price is prefill time, each chunk streaming every
/// weight from memory again (64 rows took ~13 % more CPU time than 128). A multiple of
/// 16, so each row falls in the same 16-row tile of the BF16 kernel as in one forward of
/// the whole prompt.
constexpr int64_t kPrefillChunk = 64;

/// Runs `ids` (the prompt) after what the target holds, kPrefillChunk positions per
/// forward(): the last position's logits and every position's features, as one
/// forward(ids, capture, 1) would return them.
TargetModel::Output prefill(TargetModel* target, const at::Tensor& ids, const std::vector<int64_t>& capture);

/// Loads the target under `folder` by its config.json's model_type, through its row of
/// the family table (families.h); a model_type in no row is refused by name.
Result<std::unique_ptr<TargetModel>> load_target(const std::string& folder, const ComputeOptions& options,
                                                 LoadReport* report);

}  // namespace ferry::eval
