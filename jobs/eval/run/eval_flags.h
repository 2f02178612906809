// The flags `ferry eval` takes, torch-free: the eval engine's parser
// (eval_command.cc) accepts no other, and `ferry completion` offers these without
// loading the eval plugin. Constants only; any thread.
#pragma once

#include <cstring>

namespace ferry::eval {

struct EvalFlag {
  const char* name;
  bool takes_value;
  const char* choices;  // the values it takes, space-separated; "" = any
};

inline constexpr EvalFlag kEvalFlags[] = {
    {"--target", true, ""},
    {"--drafter", true, ""},
    {"--reference", true, ""},
    {"--prompts", true, ""},
    {"--max-new-tokens", true, ""},
    {"--block-size", true, ""},
    {"--device", true, "cpu cuda"},
    {"--dtype", true, "auto float32 bfloat16 float16"},
    {"--threads", true, ""},
    {"--min-tau", true, ""},
    {"--min-ratio", true, ""},
    {"--no-baseline", false, ""},
    {"--json", false, ""},
    {"--tokenizer", true, ""},
    {"--prompt-format", true, "raw chat chat-no-think"},
    {"--show", true, ""},
    {"--shard", true, ""},
    {"--temperature", true, ""},
    {"--seed", true, ""},
    {"--baseline-store", true, ""},
    {"--help", false, ""},
};

/// The flag named `name`, or null.
inline const EvalFlag* find_eval_flag(const char* name) {
  for (const EvalFlag& f : kEvalFlags) {
    if (std::strcmp(f.name, name) == 0) return &f;
  }
  return nullptr;
}

}  // namespace ferry::eval
