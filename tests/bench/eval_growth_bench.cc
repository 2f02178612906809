// eval_growth_bench: cost per generated token of the eval engine at 64, 256 and 1,024 new
// tokens, with the KV caches on and off (full recompute every step), and the loop's own
// overhead beside the time spent in the models' forward passes. Prints medians and
// ratios; not a timed test. Models are tiny_models written to a scratch folder:
//  * plain decoding (B = 1) on a random Qwen3 target, hidden 256, MLP 2048 (the MLP
//    dominates the per-token FLOPs, so a cached decoder's cost per token should barely
//    grow with length: goal <= 1.5x from 64 to 1,024 tokens);
//  * speculative decoding (B = 16) on the oracle target (same sizes) with its
//    constructed "agree" drafter (accepted on most steps).
//
//   eval_growth_bench [--threads N] [--reps N] [--full]
// Recompute costs O(n^2): plain decoding recomputed for 1,024 tokens takes about half
// an hour on a shared 2-core box, so it runs only with --full; the B = 16 row (16x fewer
// target passes) is recomputed at every length.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "jobs/eval/models/dflash_drafter.h"
#include "jobs/eval/models/qwen3_target.h"
#include "jobs/eval/run/speculative_decoder.h"
#include "tests/bench/decode_reps.h"
#include "tests/eval/eval_test_util.h"

namespace {

using namespace ferry::eval;

struct Sample {
  double per_token_ms = 0;
  double forward_share = 0;  // (target + draft) / decode
  double overhead_ms = 0;    // loop's own time per token
  double tau = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Sample run(Qwen3Target* t, Drafter* d, const std::vector<int64_t>& prompt, int64_t b, int64_t n, bool recompute,
           const std::vector<int64_t>& capture, int reps) {
  DecodeOptions o;
  o.block_size = b;
  o.max_new_tokens = n;
  o.recompute = recompute;
  o.capture_layers = capture;
  std::vector<double> per_token, share, overhead, tau;
  for (const DecodeResult& r : bench::decode_reps(t, d, prompt, o, reps)) {
    const double tokens = static_cast<double>(r.tokens.size());
    per_token.push_back(1e3 * r.decode_seconds / tokens);
    share.push_back((r.target_seconds + r.draft_seconds) / r.decode_seconds);
    overhead.push_back(1e3 * (r.decode_seconds - r.target_seconds - r.draft_seconds) / tokens);
    tau.push_back(r.tau());
  }
  return {median(per_token), median(share), median(overhead), median(tau)};
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, reps = 3;
  bool full_plain = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (a == "--full") full_plain = true;
    else {
      std::fprintf(stderr, "usage: eval_growth_bench [--threads N] [--reps N] [--full]\n");
      return 2;
    }
  }
  at::set_num_threads(threads);
  c10::NoGradGuard no_grad;
  testing::ScratchDir dir("bench");

  TinyTargetSpec random = testing::random_target_spec(41);
  random.hidden = 256;
  random.intermediate = 2048;
  random.layers = 2;
  random.heads = 4;
  random.kv_heads = 2;
  random.head_dim = 64;
  TinyTargetSpec oracle = random;
  oracle.kind = "oracle";
  oracle.vocab = 64;
  oracle.oracle_period = 3;
  oracle.oracle_mask_token = 63;
  TinyDrafterSpec agree = testing::oracle_drafter_spec("agree", 16);
  agree.hidden = 256;
  agree.intermediate = 1024;
  agree.layers = 1;
  agree.heads = 4;
  agree.kv_heads = 2;
  agree.head_dim = 64;
  agree.target_layer_ids = {0, 1};
  agree.num_target_layers = 2;
  if (!write_tiny_target(dir / "random", random, {}).ok() || !write_tiny_target(dir / "oracle", oracle, {}).ok() ||
      !write_tiny_drafter(dir / "agree", agree, {}).ok()) {
    std::fprintf(stderr, "cannot write models\n");
    return 1;
  }
  auto t_random = Qwen3Target::load(dir / "random", {}, nullptr);
  auto t_oracle = Qwen3Target::load(dir / "oracle", {}, nullptr);
  auto drafter = DFlashDrafter::load(dir / "agree", 256, {}, nullptr);
  if (!t_random.ok() || !t_oracle.ok() || !drafter.ok()) {
    std::fprintf(stderr, "cannot load models\n");
    return 1;
  }
  auto proposer = DFlashProposer::create(t_oracle->get(), drafter->get());
  const std::vector<int64_t> prompt = testing::make_prompts(1, 64, 32, 32, 77)[0];

  std::printf("eval_growth_bench: hidden 256, MLP 2048, 2 layers, threads %d, median of %d runs (recompute: 1 run)\n",
              threads, reps);
  std::printf("%-22s %6s %12s %12s %9s %10s %12s %6s\n", "mode", "tokens", "cached ms/t", "recomp ms/t", "recomp/x",
              "fwd share", "overhead ms/t", "tau");
  struct Mode {
    const char* name;
    Qwen3Target* target;
    Drafter* drafter;
    int64_t block;
  };
  const std::vector<int64_t> capture = (*drafter)->config().target_layer_ids;
  for (const Mode& m : {Mode{"plain B=1 (random)", t_random->get(), nullptr, 1},
                        Mode{"speculative B=16", t_oracle->get(), proposer->get(), 16}}) {
    double first = 0, last = 0;
    for (int64_t n : {64, 256, 1024}) {
      Sample cached = run(m.target, m.drafter, prompt, m.block, n, false, capture, reps);
      Sample full;
      const bool skip = !full_plain && m.block == 1 && n == 1024;
      if (!skip) full = run(m.target, m.drafter, prompt, m.block, n, true, capture, 1);
      std::printf("%-22s %6lld %12.3f %12s %9s %9.1f%% %12.4f %6.2f\n", m.name, static_cast<long long>(n),
                  cached.per_token_ms, skip ? "-" : std::to_string(full.per_token_ms).substr(0, 8).c_str(),
                  skip ? "-" : (std::to_string(full.per_token_ms / cached.per_token_ms).substr(0, 5) + "x").c_str(),
                  100.0 * cached.forward_share, cached.overhead_ms, cached.tau);
      if (n == 64) first = cached.per_token_ms;
      if (n == 1024) last = cached.per_token_ms;
    }
    std::printf("%-22s cached cost per token 1024/64: %.2fx (goal <= 1.5x)\n", m.name, last / first);
  }
  return 0;
}
