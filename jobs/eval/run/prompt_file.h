// Prompts for an eval: a JSONL file, one object per line, in one of these forms:
//   {"input_ids": [...]}          token ids, used as they are
//   {"text": "..."}               text, tokenized as is (no chat format)
//   {"prompt": "..."}             one user turn, in the eval's prompt format
//   {"messages": [{"role", "content"}, ...]}   a chat, in the eval's prompt format
//   {"turns": ["...", ...]}       MT-Bench style: the first turn, as a user turn
// Text goes through the model's tokenizer (PromptEncoder). Blank lines are skipped; every
// bad line is refused naming the file, the line and the field (all of them at once, one
// per line of the message, up to 50). Plain functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "jobs/eval/run/prompt_encoder.h"

namespace ferry::eval {

struct Prompt {
  int line = 0;  // 1-based line in the file
  std::vector<int64_t> ids;
  int64_t index = 0;  // 0-based among the file's prompts: r of the sampling uniforms (token_sampler.h)
};

/// Reads and checks every line. vocab_size bounds the ids.
Result<std::vector<Prompt>> load_prompts(const std::string& path, int64_t vocab_size, PromptEncoder* encoder);

/// The prompts as the eval decodes them, by content: XXH3-128 (32 hex digits) over
/// each prompt's line and token ids, in order. What the merge of a sharded eval
/// compares for the prompts (EvalReport::fingerprints): it is the file's text through
/// the tokenizer and prompt format, and needs no second read of the file (a FIFO's
/// prompts can be read once).
std::string prompts_fingerprint(const std::vector<Prompt>& prompts);

}  // namespace ferry::eval
