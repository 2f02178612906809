#include "jobs/eval/run/speculative_decoder.h"

#include <algorithm>
#include <chrono>

namespace ferry::eval {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::vector<int64_t> argmax_rows(const at::Tensor& logits) {
  at::Tensor ids = logits.argmax(-1).to(at::kCPU).contiguous();
  const int64_t* p = ids.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + ids.numel());
}

// The target's token after each row of `logits`: its argmax, or at temperature > 0 the
// token sampled for generated positions first_position, first_position + 1, ...
std::vector<int64_t> target_tokens(const at::Tensor& logits, const DecodeOptions& options, int64_t first_position) {
  if (options.sampling.greedy()) return argmax_rows(logits);
  at::Tensor rows = logits.to(at::kCPU, at::kFloat).contiguous();  // BF16 and F16 widen exactly
  const int64_t vocab = rows.size(-1);
  const int64_t count = rows.numel() / vocab;
  const float* p = rows.data_ptr<float>();
  std::vector<int64_t> ids;
  for (int64_t k = 0; k < count; ++k) {
    const double u =
        sampling_uniform(options.sampling.seed, options.response_index, static_cast<uint64_t>(first_position + k));
    ids.push_back(sample_token(p + k * vocab, vocab, options.sampling.temperature, u));
  }
  return ids;
}

at::Tensor to_tensor(const std::vector<int64_t>& ids, size_t begin, size_t end) {
  return at::tensor(at::ArrayRef<int64_t>(ids.data() + begin, end - begin), at::kLong);
}

}  // namespace

double DecodeResult::tau() const {
  if (acceptance_lengths.empty()) return 0;
  double sum = 0;
  for (int64_t a : acceptance_lengths) sum += static_cast<double>(a);
  return sum / static_cast<double>(acceptance_lengths.size());
}

Result<DecodeResult> speculative_decode(TargetModel* target, Drafter* drafter, const std::vector<int64_t>& prompt,
                                        const DecodeOptions& options) {
  const int64_t b = options.block_size;
  if (b < 1) return invalid_argument("block_size must be at least 1");
  if (b > 1 && drafter == nullptr) return invalid_argument("block_size > 1 needs a drafter");
  if (prompt.empty()) return invalid_argument("empty prompt");
  if (options.max_new_tokens < 1) return invalid_argument("max_new_tokens must be at least 1");
  const int64_t vocab = target->config().vocab_size;
  for (int64_t id : prompt) {
    if (id < 0 || id >= vocab) {
      return invalid_argument("prompt token " + std::to_string(id) + " is outside the vocabulary (" +
                              std::to_string(vocab) + ")");
    }
  }
  FERRY_RETURN_IF_ERROR(target->check_prompt(prompt));
  const bool use_drafter = b > 1;
  const std::vector<int64_t> no_capture;
  const std::vector<int64_t>& capture = use_drafter ? options.capture_layers : no_capture;
  auto is_stop = [&](int64_t id) {
    return std::find(options.stop_ids.begin(), options.stop_ids.end(), id) != options.stop_ids.end();
  };

  DecodeResult result;
  result.accepted_at.assign(static_cast<size_t>(b), 0);
  const int64_t n = static_cast<int64_t>(prompt.size());
  const int64_t max_length = n + options.max_new_tokens;
  std::vector<int64_t> tokens = prompt;  // committed tokens, then the bonus token
  tokens.reserve(static_cast<size_t>(max_length + b));

  target->reset();
  if (drafter != nullptr) drafter->reset();
  if (!options.recompute) {
    target->reserve(max_length + b);
    if (drafter != nullptr) drafter->reserve(max_length + b);
  }

  // Prefill: logits of the last prompt position give the first bonus token.
  auto t0 = Clock::now();
  TargetModel::Output out = options.recompute
                                ? target->forward(to_tensor(prompt, 0, prompt.size()), capture, /*logits_rows=*/1)
                                : prefill(target, to_tensor(prompt, 0, prompt.size()), capture);
  tokens.push_back(target_tokens(out.logits, options, /*first_position=*/0)[0]);
  ++result.target_forwards;
  at::Tensor context = out.features;      // rows the drafter has not seen yet
  at::Tensor all_features = out.features;  // recompute mode: every committed position
  result.prefill_seconds = seconds_since(t0);

  auto loop_start = Clock::now();
  int64_t start = n;  // position of the bonus token
  bool stopped = is_stop(tokens.back());
  while (start < max_length) {
    if (options.cancel != nullptr && options.cancel->load()) return cancelled("eval cancelled");

    std::vector<int64_t> block = {tokens[static_cast<size_t>(start)]};
    if (use_drafter) {
      auto td = Clock::now();
      DraftRequest request;
      request.tokens = &tokens;
      request.start = start;
      request.block_size = b;
      if (options.recompute) {
        drafter->reset();
        request.context = all_features;
      } else {
        request.context = context;
      }
      auto draft = drafter->propose(request);
      if (!draft.ok()) return draft.status();
      if (static_cast<int64_t>(draft->size()) != b - 1) {
        return internal_error("drafter proposed " + std::to_string(draft->size()) + " tokens for a block of " +
                              std::to_string(b));
      }
      block.insert(block.end(), draft->begin(), draft->end());
      ++result.draft_forwards;
      result.draft_seconds += seconds_since(td);
    }

    auto tt = Clock::now();
    std::vector<int64_t> posterior;
    at::Tensor block_features;
    if (options.recompute) {
      target->reset();
      std::vector<int64_t> seq(tokens.begin(), tokens.begin() + start);
      seq.insert(seq.end(), block.begin(), block.end());
      out = target->forward(to_tensor(seq, 0, seq.size()), capture, /*logits_rows=*/b);
      if (out.features.defined()) block_features = out.features.narrow(0, start, b);
    } else {
      out = target->forward(to_tensor(block, 0, block.size()), capture);
      block_features = out.features;
    }
    posterior = target_tokens(out.logits, options, start + 1 - n);  // the target's token after each block slot
    ++result.target_forwards;
    result.target_seconds += seconds_since(tt);

    int64_t acc = 0;
    while (acc < b - 1 && block[static_cast<size_t>(acc + 1)] == posterior[static_cast<size_t>(acc)]) ++acc;
    for (int64_t j = 1; j <= acc; ++j) ++result.accepted_at[static_cast<size_t>(j)];
    tokens.insert(tokens.end(), block.begin() + 1, block.begin() + 1 + acc);
    tokens.push_back(posterior[static_cast<size_t>(acc)]);  // the new bonus token
    start += acc + 1;
    target->crop(start);
    if (use_drafter) {
      context = block_features.narrow(0, 0, acc + 1);
      if (options.recompute) all_features = out.features.narrow(0, 0, start);
    }
    result.acceptance_lengths.push_back(acc + 1);
    ++result.steps;
    for (int64_t j = 0; j <= acc + 1 && !stopped; ++j) {
      stopped = is_stop(tokens[tokens.size() - 1 - static_cast<size_t>(j)]);
    }
    if (stopped) break;
  }
  result.decode_seconds = seconds_since(loop_start);

  const size_t end = std::min(tokens.size(), static_cast<size_t>(max_length));
  for (size_t i = static_cast<size_t>(n); i < end; ++i) {
    result.tokens.push_back(tokens[i]);
    if (is_stop(tokens[i])) break;
  }
  return result;
}

}  // namespace ferry::eval
