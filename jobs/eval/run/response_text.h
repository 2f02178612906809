// ResponseText: one eval response as a reader sees it — the generated ids, the text
// they decode to, and which tokens came from drafts the target accepted (so `--show N`
// can mark where the drafter was right, and by omission where it went wrong). Plain
// value, no libtorch; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::tokenizer {
class Tokenizer;
}

namespace ferry::eval {

struct ResponseText {
  int line = 0;                  // the prompt's line in the prompt file
  std::vector<int64_t> prompt_ids;  // what the model was fed
  std::vector<int64_t> ids;      // generated tokens
  std::vector<bool> drafted;     // per token: an accepted draft (else the target's own token)
  std::string text;              // decoded; valid UTF-8 (U+FFFD where bytes are cut)
  std::string marked_text;       // text with accepted draft spans between kDraftOpen/kDraftClose
  std::vector<int64_t> acceptance_lengths;  // per verify step (accepted drafts + 1)
  double tau = 0;                           // their mean: this response's τ
  int matches_baseline = -1;                // 1 / 0: equal to plain greedy decoding; -1: no baseline ran

  nlohmann::json to_json() const;
};

/// Marks around the spans of accepted drafts in marked_text.
inline constexpr const char* kDraftOpen = "\u27e6";   // ⟦
inline constexpr const char* kDraftClose = "\u27e7";  // ⟧

/// Which tokens of a response came from accepted drafts. The speculative loop emits the
/// prefill's token, then per step (acceptance length a) a - 1 accepted drafts followed by
/// the target's token; the response may be cut short of the last step.
std::vector<bool> drafted_tokens(const std::vector<int64_t>& acceptance_lengths, size_t token_count);

/// [first token, token count] of each run of accepted drafts (the JSON's drafted_spans).
std::vector<std::pair<size_t, size_t>> drafted_spans(const std::vector<bool>& drafted);

/// Decodes through `tokenizer`, or as bytes when it is null (ids >= 256 as "<N>").
ResponseText make_response_text(int line, const std::vector<int64_t>& ids,
                                const std::vector<int64_t>& acceptance_lengths, const tokenizer::Tokenizer* tokenizer);

/// The first `count` responses with their draft spans marked, for the text report.
std::string render_responses(const std::vector<ResponseText>& responses, int count);

}  // namespace ferry::eval
