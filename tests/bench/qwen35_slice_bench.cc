// qwen35_slice_bench: the Qwen3.5 hybrid target on a 27B-shaped slice — Qwen3.6-27B's
// hidden size (5120), MLP (17408), attention heads (24 / 4 of 256, a quarter rotated,
// θ 1e7), Gated DeltaNet sizes (16 key / 48 value heads of 128, conv 4) and vocabulary
// (248320), with 4 layers (3 GDN + 1 gated attention) in the VLM layout, random BF16
// weights written by tiny_models (what `ferry-tiny-models target --arch qwen3_5 --vlm
// --stream ...` writes; about 8 GiB). Computes in BF16 on the CPU, so the weights stay
// memory-mapped. Prints: load time, peak RSS against the text weights' bytes, prefill
// tokens/s, time per decoded token, time of a verify-16 forward and of its rollback.
// Prints figures; not a timed test.
//
//   qwen35_slice_bench DIR [--prefill N] [--decode N] [--verify N] [--threads N] [--compare-gdn N]
// --compare-gdn N also runs an N-token prompt through the eval's prefill with the Gated
// DeltaNet's chunked form and step by step, and prints both speeds.
// DIR is written first when it has no config.json (kept for later runs).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "jobs/eval/models/qwen35_target.h"
#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/tools/tiny_models.h"

namespace {

using namespace ferry::eval;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double peak_rss_gib() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / (1024.0 * 1024.0);  // ru_maxrss is KiB on Linux
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TinyTargetSpec slice_spec() {
  TinyTargetSpec s;
  set_qwen36_27b_widths(&s);
  s.vocab = 248320;
  s.layers = 4;
  s.eos_token_id = 248044;
  s.streamed = true;
  s.seed = 27;
  return s;
}

// Bytes of the tensors the text model reads (vision tower and MTP head left out).
double text_weight_bytes(const std::string& dir) {
  auto ckpt = SafetensorsCheckpoint::open(dir);
  if (!ckpt.ok()) return 0;
  double bytes = 0;
  for (const std::string& name : (*ckpt)->names()) {
    if (name.rfind("model.visual.", 0) == 0 || name.rfind("mtp.", 0) == 0) continue;
    auto info = (*ckpt)->info(name);
    if (info.ok()) bytes += static_cast<double>(info->end - info->begin);
  }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: qwen35_slice_bench DIR [--prefill N] [--decode N] [--verify N] [--threads N] "
                 "[--compare-gdn N]\n");
    return 2;
  }
  const std::string dir = argv[1];
  int prefill = 128, decode = 4, verify = 3, threads = 2, compare_gdn = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (flag == "--prefill") prefill = v;
    else if (flag == "--decode") decode = v;
    else if (flag == "--verify") verify = v;
    else if (flag == "--threads") threads = v;
    else if (flag == "--compare-gdn") compare_gdn = v;
  }
  at::set_num_threads(threads);
  c10::NoGradGuard no_grad;

  if (!std::filesystem::exists(dir + "/config.json")) {
    auto t0 = Clock::now();
    TinyWriteSpec w;
    w.dtype = "BF16";
    w.shards = 4;
    w.vlm_wrapped = true;
    ferry::Status s = write_tiny_target(dir, slice_spec(), w);
    if (!s.ok()) {
      std::fprintf(stderr, "write: %s\n", s.message().c_str());
      return 1;
    }
    std::printf("wrote %s in %.1f s\n", dir.c_str(), since(t0));
  }
  const double weights = text_weight_bytes(dir);
  const double rss_before = peak_rss_gib();

  ComputeOptions options;
  options.dtype = at::kBFloat16;
  LoadReport report;
  auto t0 = Clock::now();
  auto loaded = Qwen35Target::load(dir, options, &report);
  const double load_s = since(t0);
  if (!loaded.ok()) {
    std::fprintf(stderr, "load: %s\n", loaded.status().message().c_str());
    return 1;
  }
  Qwen35Target& t = **loaded;
  std::printf("target  %s (%s), %lld tensors, %lld zero-copy, %zu files\n", dir.c_str(), t.describe().c_str(),
              static_cast<long long>(report.tensors_loaded), static_cast<long long>(report.tensors_zero_copy),
              report.files_opened.size());
  std::printf("load    %.2f s; text weights %.2f GiB; peak RSS before load %.2f GiB\n", load_s, weights / kGiB,
              rss_before);

  std::mt19937_64 gen(5);
  auto random_ids = [&](int n) {
    std::vector<int64_t> ids;
    for (int i = 0; i < n; ++i) ids.push_back(static_cast<int64_t>(gen() % 248000));
    return at::tensor(ids, at::kLong);
  };
  const std::vector<int64_t> capture = {1, 3};  // as a drafter reading target features would

  t0 = Clock::now();
  t.forward(random_ids(prefill), capture, /*logits_rows=*/1);
  const double prefill_s = since(t0);

  std::vector<double> steps;
  for (int i = 0; i < decode; ++i) {
    t0 = Clock::now();
    t.forward(random_ids(1), capture);
    steps.push_back(since(t0));
  }
  double decode_s = 0;
  for (size_t i = decode > 1 ? 1 : 0; i < steps.size(); ++i) decode_s += steps[i];  // first step warms up
  decode_s /= static_cast<double>(steps.size() - (decode > 1 ? 1 : 0));

  double verify_s = 0, rollback_s = 0;
  for (int i = 0; i < verify; ++i) {
    const int64_t start = t.cache_length();
    t0 = Clock::now();
    t.forward(random_ids(16), capture);  // logits for all 16 slots, as a verify needs
    verify_s += since(t0);
    t0 = Clock::now();
    t.crop(start + 1 + static_cast<int64_t>(gen() % 15));  // accept 0..14 drafts + the bonus
    rollback_s += since(t0);
  }
  verify_s /= verify;
  rollback_s /= verify;

  if (compare_gdn > 0) {
    // A prompt of compare_gdn tokens with the Gated DeltaNet's chunked form and then
    // step by step, from an empty state each time: through the eval's own prefill
    // (kPrefillChunk positions a forward) and as one forward of the whole prompt. The
    // time, and how far the last logits differ.
    const at::Tensor ids = random_ids(compare_gdn);
    for (int whole = 0; whole < 2; ++whole) {
      double seconds[2] = {0, 0};
      at::Tensor logits[2];
      for (int mode = 0; mode < 2; ++mode) {
        set_gdn_chunked_enabled(mode == 0);
        t.reset();
        t0 = Clock::now();
        auto out = whole ? t.forward(ids, capture, 1) : ferry::eval::prefill(&t, ids, capture);
        logits[mode] = out.logits.to(at::kFloat);
        seconds[mode] = since(t0);
      }
      set_gdn_chunked_enabled(kGdnChunkedByDefault);
      const double diff =
          (logits[0] - logits[1]).abs().max().item<double>() / logits[1].abs().max().item<double>();
      const std::string how =
          whole ? "one forward" : "ferry's prefill, " + std::to_string(kPrefillChunk) + " a forward";
      std::printf("prefill %d tokens (%s): GDN chunked %.1f tok/s (%.2f s), step by step %.1f tok/s (%.2f s): "
                  "%.2fx; last logits differ by %.2e of their largest\n",
                  compare_gdn, how.c_str(), compare_gdn / seconds[0], seconds[0], compare_gdn / seconds[1],
                  seconds[1], seconds[1] / seconds[0], diff);
    }
    t.reset();
    // The rule alone at the slice's head shape (48 value heads of 128 x 128), float32.
    const int64_t hv = 48, dk = 128, dv = 128, n = compare_gdn;
    at::Tensor q = at::randn({n, hv, dk}) / std::sqrt(static_cast<double>(dk)), k = at::randn({n, hv, dk});
    k = k / k.norm(2, -1, /*keepdim=*/true);
    const at::Tensor v = at::randn({n, hv, dv}), decay = at::rand({n, hv}).pow(0.1), beta = at::rand({n, hv});
    const at::Tensor initial = at::zeros({hv, dk, dv});
    double rule_s[2] = {0, 0};
    for (int mode = 0; mode < 2; ++mode) {
      set_gdn_chunked_enabled(mode == 0);
      at::Tensor state;
      t0 = Clock::now();
      gated_delta_rule(q, k, v, decay, beta, initial, &state);
      rule_s[mode] = since(t0);
    }
    set_gdn_chunked_enabled(kGdnChunkedByDefault);
    std::printf("gated delta rule alone, %lld tokens x 48 heads of 128 x 128: chunked %.3f s, step by step %.3f s: "
                "%.2fx\n",
                static_cast<long long>(n), rule_s[0], rule_s[1], rule_s[1] / rule_s[0]);
  }

  const double peak = peak_rss_gib();
  std::printf("prefill %d tokens: %.2f s = %.1f tok/s (%.2fx the time of one decode step per token)\n", prefill,
              prefill_s, prefill / prefill_s, prefill_s / (prefill * decode_s));
  std::printf("decode  %.3f s per token (mean of %d steps after a warm-up step)\n", decode_s, decode - 1);
  std::printf("verify  16 tokens %.3f s (%.2fx one decode step); rollback %.1f ms\n", verify_s, verify_s / decode_s,
              1e3 * rollback_s);
  std::printf("memory  peak RSS %.2f GiB = %.3fx the text weights (goal <= 1.15x)\n", peak, peak * kGiB / weights);
  std::printf("threads %d\n", at::get_num_threads());
  return 0;
}
