// Prompts for an eval: a JSONL file, one object per line, either {"input_ids": [...]}
// or {"text": "..."} (byte-level vocabularies only: each UTF-8 byte is a token id).
// Blank lines are skipped. Plain functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ferry::eval {

struct Prompt {
  int line = 0;  // 1-based line in the file
  std::vector<int64_t> ids;
};

/// Reads and checks every line; errors name the file and line. vocab_size bounds the
/// ids ("text" needs vocab_size >= 256).
Result<std::vector<Prompt>> load_prompts(const std::string& path, int64_t vocab_size);

}  // namespace ferry::eval
