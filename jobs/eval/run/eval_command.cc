#include "jobs/eval/run/eval_command.h"

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

#include "jobs/eval/run/eval_flags.h"
#include "jobs/eval/run/eval_progress.h"
#include "jobs/tokenizer/chat_format.h"

namespace ferry::eval {
namespace {

constexpr const char* kUsage =
    "usage: ferry eval --target DIR --drafter DIR [--reference DIR] --prompts FILE.jsonl|NAME=FILE.jsonl...\n"
    "                  [--max-new-tokens N] [--block-size B] [--device cpu|cuda] [--dtype "
    "auto|float32|bfloat16|float16]\n"
    "                  [--threads N] [--min-tau X] [--min-ratio X] [--no-baseline] [--json]\n"
    "                  [--tokenizer DIR] [--prompt-format raw|chat|chat-no-think] [--show N] [--shard K/N]\n"
    "                  [--temperature T] [--seed S]   (T > 0: the target's tokens sampled; default greedy)\n"
    "                  [--baseline-store DIR]   (the baseline and reference decoded once, reused by later evals)\n"
    "example (tiny models from `ferry-tiny-models suite --out suite`):\n"
    "  ferry eval --target suite/oracle-target --drafter suite/oracle-agree --prompts suite/oracle-prompts.jsonl\n";

Result<int> parse_int(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < 0 || v > 1000000000L) {
    return invalid_argument(flag + ": '" + text + "' is not a non-negative integer");
  }
  return static_cast<int>(v);
}

Result<double> parse_double(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(v == v)) {
    return invalid_argument(flag + ": '" + text + "' is not a number");
  }
  return v;
}

// The flags that set one field of the spec from their value: as it is, as a
// non-negative integer, or as a number.
struct TextFlag {
  const char* flag;
  std::string EvalSpec::*field;
};
constexpr TextFlag kTextFlags[] = {
    {"--target", &EvalSpec::target},       {"--drafter", &EvalSpec::drafter},
    {"--reference", &EvalSpec::reference}, {"--tokenizer", &EvalSpec::tokenizer},
    {"--prompt-format", &EvalSpec::prompt_format},
    {"--device", &EvalSpec::device},       {"--dtype", &EvalSpec::dtype},
    {"--baseline-store", &EvalSpec::baseline_store},
};
struct IntFlag {
  const char* flag;
  int EvalSpec::*field;
};
constexpr IntFlag kIntFlags[] = {
    {"--show", &EvalSpec::show_responses},
    {"--max-new-tokens", &EvalSpec::max_new_tokens},
    {"--block-size", &EvalSpec::block_size},
    {"--threads", &EvalSpec::threads},
};
struct NumberFlag {
  const char* flag;
  std::optional<double> EvalSpec::*field;
};
constexpr NumberFlag kNumberFlags[] = {
    {"--min-tau", &EvalSpec::min_tau},
    {"--min-ratio", &EvalSpec::min_ratio_to_reference},
};

// --temperature T (0 = greedy, up to kMaxTemperature) or --seed S (0 .. 2^64 - 1).
Status parse_sampling_flag(const std::string& flag, const std::string& value, EvalSpec* spec) {
  if (flag == "--temperature") {
    auto t = parse_double(flag, value);
    if (!t.ok()) return t.status();
    if (*t < 0 || *t > kMaxTemperature) {
      return invalid_argument(flag + ": '" + value + "' is not from 0 (greedy) to " +
                              std::to_string(static_cast<int>(kMaxTemperature)));
    }
    spec->temperature = *t;
    return Status();
  }
  char* end = nullptr;
  errno = 0;
  const unsigned long long seed = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || value[0] == '-' || *end != '\0' || errno != 0) {
    return invalid_argument(flag + ": '" + value + "' is not an integer from 0 to 2^64 - 1");
  }
  spec->seed = seed;
  return Status();
}

template <typename Flag, size_t N>
const Flag* find_flag(const Flag (&flags)[N], const std::string& name) {
  for (const Flag& f : flags) {
    if (name == f.flag) return &f;
  }
  return nullptr;
}

// `--prompts FILE` once, or `--prompts NAME=FILE` for each dataset (eval_datasets.h).
Status add_prompts_arg(const std::string& value, EvalSpec* spec) {
  DatasetFile d = parse_dataset_arg(value);
  if (!d.name.empty()) {
    spec->datasets.push_back(std::move(d));
  } else if (spec->prompts.empty()) {
    spec->prompts = d.prompts;
  } else {
    return invalid_argument("--prompts: '" + spec->prompts + "' and '" + value +
                            "': name each file of several (--prompts NAME=FILE)");
  }
  return Status();
}

}  // namespace

Result<EvalSpec> parse_eval_args(const std::vector<std::string>& args, bool* json) {
  EvalSpec spec;
  *json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    // kEvalFlags is the list `ferry completion` offers: a flag missing there is refused here.
    if (!find_eval_flag(a.c_str())) return invalid_argument(a + ": unknown flag");
    if (a == "--json") { *json = true; continue; }
    if (a == "--no-baseline") { spec.baseline = false; continue; }
    if (i + 1 >= args.size()) return invalid_argument(a + ": unknown flag or missing value");
    const std::string& v = args[++i];
    if (a == "--prompts") {
      FERRY_RETURN_IF_ERROR(add_prompts_arg(v, &spec));
    } else if (const TextFlag* f = find_flag(kTextFlags, a)) {
      spec.*f->field = v;
    } else if (const IntFlag* f = find_flag(kIntFlags, a)) {
      auto n = parse_int(a, v);
      if (!n.ok()) return n.status();
      spec.*f->field = *n;
    } else if (const NumberFlag* f = find_flag(kNumberFlags, a)) {
      auto x = parse_double(a, v);
      if (!x.ok()) return x.status();
      spec.*f->field = *x;
    } else if (a == "--temperature" || a == "--seed") {
      FERRY_RETURN_IF_ERROR(parse_sampling_flag(a, v, &spec));
    } else if (a == "--shard") {  // K/N, 1-based: the K-th contiguous part of the prompts
      size_t slash = v.find('/');
      auto k = parse_int(a, v.substr(0, slash));
      auto n = parse_int(a, slash == std::string::npos ? "" : v.substr(slash + 1));
      if (!k.ok() || !n.ok() || *k < 1 || *k > *n)
        return invalid_argument(a + ": '" + v + "' is not K/N with 1 <= K <= N");
      spec.shard_index = *k - 1;
      spec.shard_count = *n;
    } else {
      return invalid_argument(a + ": unknown flag");
    }
  }
  if (spec.target.empty() || spec.drafter.empty() || (spec.prompts.empty() && spec.datasets.empty())) {
    return invalid_argument("--target, --drafter and --prompts are required");
  }
  if (Status s = check_datasets(spec.datasets, spec.prompts); !s.ok()) return invalid_argument("--" + s.message());
  if (spec.max_new_tokens < 1) return invalid_argument("--max-new-tokens must be at least 1");
  auto format = tokenizer::parse_prompt_format(spec.prompt_format);
  if (!format.ok()) return invalid_argument("--prompt-format: " + format.status().message());
  return spec;
}

int eval_command_main(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return kEvalExitOk;
    }
  }
  bool json = false;
  auto spec = parse_eval_args(args, &json);
  if (!spec.ok()) {
    std::cerr << "ferry eval: " << spec.status().message() << "\n" << kUsage;
    return kEvalExitUsage;
  }
  // People read the progress lines; the JSON ones are for ferry's eval stages.
  const std::string json_marker = kEvalProgressJson;
  auto report = run_eval(
      *spec,
      [&](const std::string& line) {
        if (line.compare(0, json_marker.size(), json_marker) != 0) std::cerr << "eval: " << line << "\n";
      },
      nullptr);
  if (!report.ok()) {
    std::cerr << "ferry eval: " << report.status().message() << "\n";
    return kEvalExitUsage;
  }
  if (json) {
    std::cout << report->to_json().dump(2) << "\n";
  } else {
    std::cout << report->to_text();
  }
  return report->gate_passed ? kEvalExitOk : kEvalExitGateFailed;
}

}  // namespace ferry::eval
