// dflash-train-drafter: trains a DFlash drafter against a frozen dflash-train-target
// model with the DFlash objective (shared/reference/dflash-eval.md §3) and writes it
// in the z-lab layout (config.json + unprefixed model.safetensors, F32) every
// --save-every steps and at the end; with --checkpoints DIR also a kept copy of each
// as DIR/checkpoint-STEP, written under a hidden name and renamed when whole (so a
// watching eval never sees half of one).
//
// Planted mistakes for fault tests: --target-layers trains on other target layers
// (written honestly to the config); --config-target-layers / --config-mask-id write a
// config that disagrees with what the drafter was trained on.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>

#include <sys/stat.h>

#include <ATen/Parallel.h>

#include "examples/dflash-tiny/corpus.h"
#include "examples/dflash-tiny/tiny_model.h"
#include "examples/dflash-tiny/train_flags.h"

namespace {

const char kUsage[] =
    "usage: dflash-train-drafter --target DIR --data DIR --out DIR [--steps N] [--quick] [--batch N]\n"
    "                            [--seq-len N] [--anchors N] [--block-size B] [--gamma X] [--lr X] [--seed N]\n"
    "                            [--save-every N] [--checkpoints DIR] [--threads N] [--layers N] [--intermediate N]\n"
    "                            [--target-layers 1,2] [--mask-id N]\n"
    "                            [--config-target-layers 1,2] [--config-mask-id N]   (planted mistakes)\n"
    "  defaults: --steps 800 --batch 8 --seq-len 96 --anchors 12 --block-size 8 --gamma 4 --lr 3e-3 --seed 2\n"
    "            --save-every 100 --threads 1 --layers 1 --intermediate 192 --mask-id 259\n"
    "            --target-layers build_target_layer_ids(target layers, drafter layers)\n"
    "  --quick: --steps 40\n";

int fail(const std::string& msg) { return ferry::dflash_tiny::train_fail("dflash-train-drafter", msg); }

std::string ids_text(const std::vector<int64_t>& ids) {
  std::string s;
  for (int64_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return "[" + s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ferry::dflash_tiny;
  std::string target_dir, data, out, checkpoints, layers_flag, config_layers_flag;
  TrainFlags flags;
  flags.steps = 800;
  flags.save_every = 100;
  flags.lr = 3e-3;
  flags.seed = 2;
  long anchors = 12, block = 8, draft_layers = 1, intermediate = 192, mask_id = kMaskId, config_mask_id = -1;
  double gamma = 4.0;
  auto own = [&](const std::string& a, const std::string& v) {
    const long n = std::atol(v.c_str());
    if (a == "--target") target_dir = v;
    else if (a == "--data") data = v;
    else if (a == "--out") out = v;
    else if (a == "--anchors") anchors = n;
    else if (a == "--block-size") block = n;
    else if (a == "--gamma") gamma = std::atof(v.c_str());
    else if (a == "--checkpoints") checkpoints = v;
    else if (a == "--layers") draft_layers = n;
    else if (a == "--intermediate") intermediate = n;
    else if (a == "--target-layers") layers_flag = v;
    else if (a == "--mask-id") mask_id = n;
    else if (a == "--config-target-layers") config_layers_flag = v;
    else if (a == "--config-mask-id") config_mask_id = n;
    else return false;
    return true;
  };
  if (int code = read_train_flags(argc, argv, "dflash-train-drafter", kUsage, &flags, own); code >= 0) return code;
  const long steps = flags.steps, batch = flags.batch, seq_len = flags.seq_len, save_every = flags.save_every;
  const double lr = flags.lr;
  const unsigned long long seed = flags.seed;
  if (target_dir.empty() || data.empty() || out.empty()) {
    return fail(std::string("--target, --data and --out are required\n") + kUsage);
  }
  if (steps < 1 || batch < 1 || block < 2 || draft_layers < 1 || save_every < 1 || !(gamma > 0))
    return fail("bad sizes");
  if (anchors < 1 || anchors > seq_len - 2) return fail("--anchors must be in 1..seq-len-2");
  at::set_num_threads(static_cast<int>(flags.threads));

  auto loaded = load_target(target_dir);
  if (!loaded.ok()) return fail(loaded.status().message());
  const Target& target = *loaded;
  if (mask_id < 0 || mask_id >= target.dims.vocab) return fail("--mask-id outside the target's vocab");
  if (seq_len + block > target.dims.max_positions) return fail("--seq-len + --block-size exceeds max positions");

  std::vector<int64_t> layer_ids = layers_flag.empty() ? default_target_layer_ids(target.dims.layers, draft_layers)
                                                       : parse_ids(layers_flag);
  if (layer_ids.empty()) return fail("bad --target-layers '" + layers_flag + "'");
  for (int64_t id : layer_ids) {
    if (id >= target.dims.layers) return fail("--target-layers: layer " + std::to_string(id) + " outside the target");
    if (id == target.dims.layers - 1) {
      // The engine hands out the final-normed output for the last layer (HF's last
      // hidden_states slot); training on the raw output would not match it.
      return fail("--target-layers: the last target layer is not supported (HF gives its normed output)");
    }
  }
  std::vector<int64_t> config_ids = config_layers_flag.empty() ? layer_ids : parse_ids(config_layers_flag);
  if (config_ids.size() != layer_ids.size()) return fail("--config-target-layers must list as many layers");

  auto train = load_stream(data + "/train.bin");
  if (!train.ok()) return fail(train.status().message());
  auto held = load_stream(data + "/heldout.bin");
  if (!held.ok()) return fail(held.status().message());

  Dims dims = target.dims;
  dims.layers = draft_layers;
  dims.intermediate = intermediate;
  Drafter drafter = init_drafter(dims, static_cast<int64_t>(layer_ids.size()) * target.dims.hidden, seed);
  drafter.block_size = block;
  drafter.mask_id = mask_id;
  drafter.num_target_layers = target.dims.layers;
  drafter.target_layer_ids = layer_ids;
  Drafter written = drafter;  // same tensors; only the config may differ (planted mistakes)
  written.target_layer_ids = config_ids;
  if (config_mask_id >= 0) written.mask_id = config_mask_id;

  uint64_t rng = seed * 104729 + 3;
  auto make_batch = [&](const TokenStream& stream, int64_t rows, uint64_t* state) {
    at::Tensor tokens = sample_windows(stream, rows, seq_len, state);
    at::Tensor features;
    {
      at::NoGradGuard no_grad;
      std::vector<at::Tensor> captured;
      target_forward(target, tokens, layer_ids, &captured);
      features = at::cat(captured, -1);  // [rows, S, len(ids) * hidden]
    }
    // Anchors: `anchors` distinct positions in [1, S-2] per row (partial Fisher-Yates).
    at::Tensor a = at::empty({rows, anchors}, at::kLong);
    std::vector<int64_t> pool(static_cast<size_t>(seq_len - 2));
    for (int64_t r = 0; r < rows; ++r) {
      std::iota(pool.begin(), pool.end(), 1);
      for (int64_t j = 0; j < anchors; ++j) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        const int64_t pick = j + static_cast<int64_t>((*state >> 33) % static_cast<uint64_t>(pool.size() - j));
        std::swap(pool[j], pool[pick]);
        a[r][j] = pool[j];
      }
    }
    return std::make_tuple(tokens, features, a);
  };

  AdamW opt(parameters(drafter.named()), /*weight_decay=*/0.01);
  std::printf("dflash-train-drafter: %ld steps, batch %ld x %ld tokens, %ld anchors, block %ld, gamma %.1f, "
              "%ld layers, target layers %s (config %s), mask %ld (config %ld)\n",
              steps, batch, seq_len, anchors, block, gamma, draft_layers, ids_text(layer_ids).c_str(),
              ids_text(config_ids).c_str(), mask_id, written.mask_id);
  const auto t0 = std::chrono::steady_clock::now();
  for (long step = 0; step < steps; ++step) {
    auto [tokens, features, a] = make_batch(*train, batch, &rng);
    DrafterBatchStats stats;
    at::Tensor loss = drafter_loss(drafter, target, tokens, features, a, gamma, &stats);
    loss.backward();
    const double rate = lr_at(step, steps, lr, 0.05);
    opt.step(rate, 1.0);
    if ((step + 1) % 20 == 0 || step == 0 || step + 1 == steps) {
      std::printf("step %5ld  loss %.4f  acc@1 %.3f  acc@all %.3f  lr %.2e  elapsed %.1fs\n", step + 1, stats.loss,
                  stats.slot1_accuracy, stats.all_accuracy, rate, seconds_since(t0));
      std::fflush(stdout);
    }
    if ((step + 1) % save_every == 0 || step + 1 == steps) {
      auto st = save_drafter(out, written);
      if (!st.ok()) return fail(st.message());
      if (!checkpoints.empty()) {
        ::mkdir(checkpoints.c_str(), 0755);
        const std::string name = checkpoints + "/checkpoint-" + std::to_string(step + 1);
        const std::string hidden = checkpoints + "/.checkpoint-" + std::to_string(step + 1) + ".writing";
        st = save_drafter(hidden, written);
        if (!st.ok()) return fail(st.message());
        // A checkpoint of that step from an earlier training in this folder is replaced:
        // moved aside, the new one renamed in, the old one removed.
        const std::string old = checkpoints + "/.checkpoint-" + std::to_string(step + 1) + ".replaced";
        const bool had_one = std::rename(name.c_str(), old.c_str()) == 0;
        if (std::rename(hidden.c_str(), name.c_str()) != 0) return fail("cannot rename " + hidden + " to " + name);
        std::error_code ignored;
        if (had_one) std::filesystem::remove_all(old, ignored);
      }
    }
  }
  {
    at::NoGradGuard no_grad;
    uint64_t hrng = 54321;
    auto [tokens, features, a] = make_batch(*held, 16, &hrng);
    DrafterBatchStats stats;
    drafter_loss(drafter, target, tokens, features, a, gamma, &stats);
    std::printf("held-out: loss %.4f  acc@1 %.3f  acc@all %.3f  total %.1fs  -> %s\n", stats.loss,
                stats.slot1_accuracy, stats.all_accuracy, seconds_since(t0), out.c_str());
  }
  return 0;
}
