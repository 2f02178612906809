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
#include "examples/dflash-tiny/train_flags.h"

namespace {

const char kUsage[] =
    "usage: dflash-train-target --data DIR --out DIR [--steps N] [--quick] [--batch N] [--seq-len N]\n"
    "                           [--lr X] [--seed N] [--save-every N] [--threads N]\n"
    "                           [--layers N] [--hidden N] [--intermediate N] [--heads N] [--kv-heads N] [--head-dim "
    "N]\n"
    "  defaults: --steps 300 --batch 8 --seq-len 96 --lr 5e-3 --seed 1 --save-every 50 --threads 1\n"
    "            --layers 4 --hidden 64 --intermediate 192 --heads 4 --kv-heads 2 --head-dim 16\n"
    "  --quick: --steps 40\n";

int fail(const std::string& msg) { return ferry::dflash_tiny::train_fail("dflash-train-target", msg); }

}  // namespace

int main(int argc, char** argv) {
  using namespace ferry::dflash_tiny;
  std::string data, out;
  TrainFlags flags;
  flags.steps = 300;
  flags.save_every = 50;
  flags.lr = 5e-3;
  flags.seed = 1;
  Dims dims;
  auto own = [&](const std::string& a, const std::string& v) {
    const long n = std::atol(v.c_str());
    if (a == "--data") data = v;
    else if (a == "--out") out = v;
    else if (a == "--layers") dims.layers = n;
    else if (a == "--hidden") dims.hidden = n;
    else if (a == "--intermediate") dims.intermediate = n;
    else if (a == "--heads") dims.heads = n;
    else if (a == "--kv-heads") dims.kv_heads = n;
    else if (a == "--head-dim") dims.head_dim = n;
    else return false;
    return true;
  };
  if (int code = read_train_flags(argc, argv, "dflash-train-target", kUsage, &flags, own); code >= 0) return code;
  const long steps = flags.steps, batch = flags.batch, seq_len = flags.seq_len, save_every = flags.save_every;
  const long threads = flags.threads;
  const double lr = flags.lr;
  const unsigned long long seed = flags.seed;
  if (data.empty() || out.empty()) return fail(std::string("--data and --out are required\n") + kUsage);
  if (steps < 1 || batch < 1 || seq_len < 2 || seq_len > dims.max_positions || save_every < 1) return fail("bad sizes");
  if (dims.heads % dims.kv_heads != 0 || dims.head_dim % 2 != 0)
    return fail("heads must be a multiple of kv-heads, head-dim even");
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
