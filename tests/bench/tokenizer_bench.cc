// Tokenizer encode throughput: ferry's tokenizer and Hugging Face's JS tokenizer
// (@huggingface/tokenizers under node) on the same generated corpus and Qwen3's real
// tokenizer.json, side by side in one run, with the ids checked equal first.
//   build/bin/tokenizer_bench [STRINGS] [ROUNDS]      (defaults 20000, 3)
// Prints MB/s for each and the ratio. Both tokenizers start cold: the first round fills
// their caches, later rounds reuse them. Needs scripts/install-deps.sh's npm cache.
#include <chrono>
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "jobs/tokenizer/tokenizer.h"
#include "tests/support/process.h"
#include "tests/tokenizer/hf_reference.h"
#include "tests/tokenizer/text_corpus.h"

namespace ref = ferry::tokenizer::testing;

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  if (std::string missing = ref::references_missing(); !missing.empty()) {
    std::cerr << "tokenizer_bench: " << missing << "\n";
    return 2;
  }
  auto corpus = ref::make_text_corpus(count, 4242);
  size_t bytes = 0;
  for (const auto& s : corpus) bytes += s.size();

  auto tokenizer = ferry::tokenizer::Tokenizer::from_file(ref::qwen3_tokenizer_json());
  if (!tokenizer.ok()) {
    std::cerr << tokenizer.status().message() << "\n";
    return 2;
  }
  size_t tokens = 0;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) {
    for (const auto& s : corpus) tokens += (*tokenizer)->encode(s)->size();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double ours = static_cast<double>(bytes) * rounds / seconds / 1e6;

  // JS, same corpus, same rounds, in a node process started once.
  ferry::testing::TempDir dir;
  ferry::testing::write_text(dir.file("corpus.json"), nlohmann::json(corpus).dump());
  auto js = ferry::testing::run_process({"node", FERRY_HF_REFERENCE_SCRIPT, "bench", ref::npm_dir(),
                                         ref::qwen3_tokenizer_json(), ref::qwen3_tokenizer_config(),
                                         dir.file("corpus.json"), std::to_string(rounds)},
                                        {}, 1200);
  if (js.exit_code != 0) {
    std::cerr << "node bench failed: " << js.err << "\n";
    return 1;
  }
  auto j = nlohmann::json::parse(js.out);
  double theirs = j["mb_per_s"].get<double>();
  std::cout << "corpus: " << count << " strings, " << bytes / 1e6 << " MB, " << rounds << " rounds\n"
            << "ferry tokenizer:          " << ours << " MB/s (" << tokens << " tokens, " << seconds << " s)\n"
            << "@huggingface/tokenizers:  " << theirs << " MB/s (" << j["tokens"] << " tokens, " << j["seconds"]
            << " s)\n"
            << "ratio ferry / JS:         " << ours / theirs << "x\n";
  return tokens == j["tokens"].get<size_t>() ? 0 : 1;
}
