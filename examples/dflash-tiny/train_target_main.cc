// dflash-train-target: trains the tiny byte-level Qwen3 target on dflash-tiny-data's
// corpus with next-token cross-entropy and writes it in the Hugging Face layout
// (config.json + model.safetensors, F32) every --save-every steps and at the end.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <ATen/Parallel.h>

#include "examples/dflash-tiny/corpus.h"
#include "examples/dflash-tiny/tiny_model.h"

namespace {

const char kUsage[] =
    "usage: dflash-train-target --data DIR --out DIR [--steps N] [--quick] [--batch N] [--seq-len N]\n"
    "                           [--lr X] [--seed N] [--save-every N] [--threads N]\n"
    "                           [--layers N] [--hidden N] [--intermediate N] [--heads N] [--kv-heads N] [--head-dim N]\n"
    "  defaults: --steps 300 --batch 8 --seq-len 96 --lr 5e-3 --seed 1 --save-every 50 --threads 1\n"
    "            --layers 4 --hidden 64 --intermediate 192 --heads 4 --kv-heads 2 --head-dim 16\n"
    "  --quick: --steps 40\n";

int fail(const std::string& msg) {
  std::fprintf(stderr, "dflash-train-target: %s\n", msg.c_str());
  return 2;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ferry::dflash_tiny;
  std::string data, out;
  long steps = 300, batch = 8, seq_len = 96, save_every = 50, threads = 1;
  double lr = 5e-3;
  unsigned long long seed = 1;
  Dims dims;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
    if (a == "--quick") { steps = 40; continue; }
    if (i + 1 >= argc) return fail("missing value after " + a + "\n" + kUsage);
    std::string v = argv[++i];
    long n = std::atol(v.c_str());
    if (a == "--data") data = v;
    else if (a == "--out") out = v;
    else if (a == "--steps") steps = n;
    else if (a == "--batch") batch = n;
    else if (a == "--seq-len") seq_len = n;
    else if (a == "--lr") lr = std::atof(v.c_str());
    else if (a == "--seed") seed = std::strtoull(v.c_str(), nullptr, 10);
    else if (a == "--save-every") save_every = n;
    else if (a == "--threads") threads = n;
    else if (a == "--layers") dims.layers = n;
    else if (a == "--hidden") dims.hidden = n;
    else if (a == "--intermediate") dims.intermediate = n;
    else if (a == "--heads") dims.heads = n;
    else if (a == "--kv-heads") dims.kv_heads = n;
    else if (a == "--head-dim") dims.head_dim = n;
    else return fail("unknown flag " + a + "\n" + kUsage);
  }
  if (data.empty() || out.empty()) return fail(std::string("--data and --out are required\n") + kUsage);
  if (steps < 1 || batch < 1 || seq_len < 2 || seq_len > dims.max_positions || save_every < 1) return fail("bad sizes");
  if (dims.heads % dims.kv_heads != 0 || dims.head_dim % 2 != 0) return fail("heads must be a multiple of kv-heads, head-dim even");
  at::set_num_threads(static_cast<int>(threads));

  auto train = load_stream(data + "/train.bin");
  if (!train.ok()) return fail(train.status().message());
  auto held = load_stream(data + "/heldout.bin");
  if (!held.ok()) return fail(held.status().message());

  Target target = init_target(dims, seed);
  AdamW opt(parameters(target.named()), /*weight_decay=*/0.01);
  uint64_t rng = seed * 7919 + 17;
  auto next_token_loss = [&](const at::Tensor& tokens, double* accuracy) {
    at::Tensor logits = target_forward(target, tokens.narrow(1, 0, seq_len - 1), {}, nullptr);
    at::Tensor labels = tokens.narrow(1, 1, seq_len - 1);
    at::Tensor logp = at::log_softmax(logits, -1);
    if (accuracy) *accuracy = (logits.argmax(-1) == labels).to(at::kFloat).mean().item<double>();
    return -logp.gather(-1, labels.unsqueeze(-1)).mean();
  };
  std::printf("dflash-train-target: %ld steps, batch %ld x %ld tokens, %ld layers, hidden %ld, threads %ld\n", steps,
              batch, seq_len, dims.layers, dims.hidden, threads);
  const auto t0 = std::chrono::steady_clock::now();
  double smooth = 0;
  for (long step = 0; step < steps; ++step) {
    at::Tensor tokens = sample_windows(*train, batch, seq_len, &rng);
    at::Tensor loss = next_token_loss(tokens, nullptr);
    loss.backward();
    const double rate = lr_at(step, steps, lr, 0.05);
    opt.step(rate, 1.0);
    const double l = loss.item<double>();
    smooth = step == 0 ? l : 0.9 * smooth + 0.1 * l;
    if ((step + 1) % 20 == 0 || step == 0 || step + 1 == steps) {
      std::printf("step %5ld  loss %.4f  (avg %.4f)  lr %.2e  elapsed %.1fs\n", step + 1, l, smooth, rate,
                  seconds_since(t0));
      std::fflush(stdout);
    }
    if ((step + 1) % save_every == 0 || step + 1 == steps) {
      auto st = save_target(out, target);
      if (!st.ok()) return fail(st.message());
    }
  }
  {
    at::NoGradGuard no_grad;
    uint64_t hrng = 12345;
    double acc = 0;
    double hl = next_token_loss(sample_windows(*held, 32, seq_len, &hrng), &acc).item<double>();
    std::printf("held-out: loss %.4f  next-byte accuracy %.3f  total %.1fs  -> %s\n", hl, acc, seconds_since(t0),
                out.c_str());
  }
  return 0;
}
