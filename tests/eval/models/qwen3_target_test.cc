// The Qwen3 target and the DFlash drafter against a naive re-implementation written
// here from the reference math (per-head loops, explicit RoPE angles in double,
// explicit causal masks), the KV cache against full recompute, and loading: BF16 and
// sharded twins, VLM-wrapped checkpoints, and broken checkpoints. Models are the
// seeded tiny models of jobs/eval/tools/tiny_models.
#include "jobs/eval/models/qwen3_target.h"

#include <ATen/Parallel.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "jobs/eval/cpu/cpu_features.h"
#include "jobs/eval/models/dflash_drafter.h"
#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/io/safetensors_writer.h"
#include "jobs/eval/run/speculative_decoder.h"
#include "tests/eval/eval_test_util.h"
#include "tests/eval/model_suite.h"
#include "tests/eval/tensor_test_util.h"

namespace ferry::eval {
namespace {

using testing::ScratchDir;
using testing::greedy;
using testing::ids_tensor;
using testing::relative_error;
using testing::Weights;

// ---- naive reference ------------------------------------------------------

at::Tensor naive_rms(const at::Tensor& x, const at::Tensor& w, double eps) {
  return x / at::sqrt((x * x).mean(-1, true) + eps) * w;
}

// x: [T, heads, hd] at positions first..first+T-1.
at::Tensor naive_rope(const at::Tensor& x, int64_t first, double theta) {
  at::Tensor out = x.clone();
  const int64_t t = x.size(0), hd = x.size(2), half = hd / 2;
  for (int64_t p = 0; p < t; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      double angle = static_cast<double>(first + p) * std::pow(theta, -2.0 * static_cast<double>(i) / hd);
      at::Tensor a = x.select(0, p).select(-1, i), b = x.select(0, p).select(-1, i + half);
      out.select(0, p).select(-1, i).copy_(a * std::cos(angle) - b * std::sin(angle));
      out.select(0, p).select(-1, i + half).copy_(b * std::cos(angle) + a * std::sin(angle));
    }
  }
  return out;
}

// q: [T, nh, hd], k/v: [S, nkv, hd]; query t sees keys s <= t + offset (causal) or all;
// window > 0 also hides keys with t + offset - s >= window.
at::Tensor naive_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal,
                           int64_t offset, int64_t window = 0) {
  const int64_t t = q.size(0), nh = q.size(1), hd = q.size(2), s = k.size(0), nkv = k.size(1);
  at::Tensor out = at::zeros({t, nh, hd}, q.options());
  for (int64_t h = 0; h < nh; ++h) {
    const int64_t kvh = h / (nh / nkv);
    at::Tensor scores = at::matmul(q.select(1, h), k.select(1, kvh).t()) / std::sqrt(static_cast<double>(hd));
    if (causal) {
      for (int64_t i = 0; i < t; ++i) {
        for (int64_t j = 0; j < s; ++j) {
          if (j > i + offset || (window > 0 && i + offset - j >= window)) scores[i][j] = -1e300;
        }
      }
    }
    out.select(1, h).copy_(at::matmul(at::softmax(scores, -1), v.select(1, kvh)));
  }
  return out.reshape({t, nh * hd});
}

at::Tensor naive_mlp(const Weights& w, const std::string& p, const at::Tensor& x) {
  at::Tensor g = at::matmul(x, w.at(p + "mlp.gate_proj.weight").t());
  at::Tensor u = at::matmul(x, w.at(p + "mlp.up_proj.weight").t());
  return at::matmul(g * at::sigmoid(g) * u, w.at(p + "mlp.down_proj.weight").t());
}

struct NaiveTargetOut {
  at::Tensor logits;                  // [T, V]
  std::vector<at::Tensor> layer_out;  // raw output of every layer, [T, H]
};

NaiveTargetOut naive_target(const Weights& w, const DecoderConfig& c, const std::vector<int64_t>& ids) {
  const int64_t t = static_cast<int64_t>(ids.size());
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  at::Tensor x = w.at("model.embed_tokens.weight").index_select(0, at::tensor(ids, at::kLong));
  NaiveTargetOut out;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    at::Tensor h = naive_rms(x, w.at(p + "input_layernorm.weight"), c.rms_norm_eps);
    at::Tensor q = at::matmul(h, w.at(p + "self_attn.q_proj.weight").t()).view({t, nh, hd});
    at::Tensor k = at::matmul(h, w.at(p + "self_attn.k_proj.weight").t()).view({t, nkv, hd});
    at::Tensor v = at::matmul(h, w.at(p + "self_attn.v_proj.weight").t()).view({t, nkv, hd});
    q = naive_rope(naive_rms(q, w.at(p + "self_attn.q_norm.weight"), c.rms_norm_eps), 0, c.rope_theta);
    k = naive_rope(naive_rms(k, w.at(p + "self_attn.k_norm.weight"), c.rms_norm_eps), 0, c.rope_theta);
    x = x + at::matmul(naive_attention(q, k, v, true, 0), w.at(p + "self_attn.o_proj.weight").t());
    x = x + naive_mlp(w, p, naive_rms(x, w.at(p + "post_attention_layernorm.weight"), c.rms_norm_eps));
    out.layer_out.push_back(x);
  }
  at::Tensor head = c.tie_word_embeddings ? w.at("model.embed_tokens.weight") : w.at("lm_head.weight");
  out.logits = at::matmul(naive_rms(x, w.at("model.norm.weight"), c.rms_norm_eps), head.t());
  return out;
}

// Drafter output for a block at positions ctx_len.. after the full context [0, ctx_len).
// Sliding layers (dc.sliding_layer): causal over [context; block] with the window.
at::Tensor naive_drafter(const Weights& w, const Weights& tw, const DFlashConfig& dc, const at::Tensor& features,
                         const std::vector<int64_t>& block) {
  const DecoderConfig& c = dc.model;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int64_t ctx_len = features.size(0), b = static_cast<int64_t>(block.size());
  at::Tensor ctx = naive_rms(at::matmul(features, w.at("fc.weight").t()), w.at("hidden_norm.weight"), c.rms_norm_eps);
  at::Tensor x = tw.at("model.embed_tokens.weight").index_select(0, at::tensor(block, at::kLong));
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    at::Tensor h = naive_rms(x, w.at(p + "input_layernorm.weight"), c.rms_norm_eps);
    at::Tensor both = at::cat({ctx, h}, 0);  // keys and values from [context; block]
    at::Tensor q = at::matmul(h, w.at(p + "self_attn.q_proj.weight").t()).view({b, nh, hd});
    at::Tensor k = at::matmul(both, w.at(p + "self_attn.k_proj.weight").t()).view({ctx_len + b, nkv, hd});
    at::Tensor v = at::matmul(both, w.at(p + "self_attn.v_proj.weight").t()).view({ctx_len + b, nkv, hd});
    q = naive_rope(naive_rms(q, w.at(p + "self_attn.q_norm.weight"), c.rms_norm_eps), ctx_len, c.rope_theta);
    k = naive_rope(naive_rms(k, w.at(p + "self_attn.k_norm.weight"), c.rms_norm_eps), 0, c.rope_theta);
    const bool sliding = dc.sliding_layer[static_cast<size_t>(l)];
    x = x + at::matmul(naive_attention(q, k, v, sliding, ctx_len, sliding ? dc.sliding_window : 0),
                       w.at(p + "self_attn.o_proj.weight").t());
    x = x + naive_mlp(w, p, naive_rms(x, w.at(p + "post_attention_layernorm.weight"), c.rms_norm_eps));
  }
  return naive_rms(x, w.at("norm.weight"), c.rms_norm_eps);
}

std::vector<int64_t> slice(const std::vector<int64_t>& v, size_t b, size_t e) {
  return std::vector<int64_t>(v.begin() + static_cast<long>(b), v.begin() + static_cast<long>(e));
}

class Qwen3TargetTest : public testing::ModelSuiteTest<Qwen3TargetTest> {
 public:
  static void write_models() {
    at::set_num_threads(1);
    ASSERT_TRUE(write_tiny_target(*dir_ / "target", testing::random_target_spec(), {}).ok());
    ASSERT_TRUE(write_tiny_drafter(*dir_ / "drafter", testing::random_drafter_spec(), {}).ok());
    // The same weights as a Qwen3.6-style drafter: layer 0 sliding (window 5), layer 1 full.
    TinyDrafterSpec swa = testing::random_drafter_spec();
    swa.layer_types = {"sliding_attention", "full_attention"};
    swa.sliding_window = 5;
    ASSERT_TRUE(write_tiny_drafter(*dir_ / "drafter-swa", swa, {}).ok());
  }

 protected:
};

TEST_F(Qwen3TargetTest, MatchesNaiveReference) {
  LoadReport report;
  auto target = Qwen3Target::load(*dir_ / "target", {}, &report);
  ASSERT_TRUE(target.ok()) << target.status().message();
  EXPECT_TRUE(report.unused.empty());
  EXPECT_EQ(report.tensors_loaded, 3 + 11 * 4);
  const std::vector<int64_t> ids = testing::make_prompts(1, 320, 23, 23, 5)[0];
  Weights w = testing::read_weights(*dir_ / "target");
  NaiveTargetOut want = naive_target(w, (*target)->config(), ids);
  Qwen3Target::Output got = (*target)->forward(ids_tensor(ids), {1, 3});
  EXPECT_LT(relative_error(got.logits, want.logits), 1e-5);
  // features = [raw layer 1 ; final-normed layer 3] (HF hidden_states[2], hidden_states[4]).
  at::Tensor last = naive_rms(want.layer_out[3], w.at("model.norm.weight"), (*target)->config().rms_norm_eps);
  EXPECT_LT(relative_error(got.features, at::cat({want.layer_out[1], last}, -1)), 1e-5);
}

// prefill() runs a prompt longer than kPrefillChunk in chunks: the same logits,
// features and cache as one forward of it, so the next step goes on alike.
TEST_F(Qwen3TargetTest, PrefillInChunksMatchesOneForward) {
  auto chunked = Qwen3Target::load(*dir_ / "target", {}, nullptr);
  auto whole = Qwen3Target::load(*dir_ / "target", {}, nullptr);
  ASSERT_TRUE(chunked.ok() && whole.ok());
  const int64_t n = 2 * kPrefillChunk + 37;
  const std::vector<int64_t> seq = testing::make_prompts(1, 320, n + 3, n + 3, 5)[0];
  const std::vector<int64_t> capture = {0, 2};
  TargetModel::Output a = prefill(chunked->get(), ids_tensor(slice(seq, 0, n)), capture);
  TargetModel::Output b = (*whole)->forward(ids_tensor(slice(seq, 0, n)), capture, 1);
  EXPECT_EQ((*chunked)->cache_length(), n);
  EXPECT_EQ(a.logits.sizes(), b.logits.sizes());
  EXPECT_EQ(a.features.sizes(), b.features.sizes());
  EXPECT_LT(relative_error(a.logits, b.logits), 1e-4);
  EXPECT_LT(relative_error(a.features, b.features), 1e-4);
  TargetModel::Output next_a = (*chunked)->forward(ids_tensor(slice(seq, n, n + 3)), capture);
  TargetModel::Output next_b = (*whole)->forward(ids_tensor(slice(seq, n, n + 3)), capture);
  EXPECT_LT(relative_error(next_a.logits, next_b.logits), 1e-4);
}

TEST_F(Qwen3TargetTest, CachedStepsWithCropsMatchFullRecompute) {
  auto target = Qwen3Target::load(*dir_ / "target", {}, nullptr);
  ASSERT_TRUE(target.ok());
  Qwen3Target& t = **target;
  auto second = Qwen3Target::load(*dir_ / "target", {}, nullptr);  // recomputes from scratch
  ASSERT_TRUE(second.ok());
  Qwen3Target& full = **second;
  std::mt19937_64 gen(7);
  const std::vector<int64_t> seq = testing::make_prompts(1, 320, 120, 120, 9)[0];
  // Prefill 17, then blocks of 5 accepting a random prefix each time, as the loop does.
  int64_t start = 17;
  t.reset();
  t.forward(ids_tensor(slice(seq, 0, 17)), {});
  int checks = 0;
  while (start + 5 <= 110) {
    Qwen3Target::Output step = t.forward(ids_tensor(slice(seq, start, start + 5)), {0, 2});
    full.reset();
    Qwen3Target::Output whole = full.forward(ids_tensor(slice(seq, 0, start + 5)), {0, 2});
    EXPECT_LT(relative_error(step.logits, whole.logits.narrow(0, start, 5)), 1e-4) << "start " << start;
    EXPECT_LT(relative_error(step.features, whole.features.narrow(0, start, 5)), 1e-4) << "start " << start;
    ++checks;
    int64_t accepted = static_cast<int64_t>(gen() % 5);
    start += accepted + 1;
    t.crop(start);
    EXPECT_EQ(t.cache_length(), start);
  }
  EXPECT_GT(checks, 15);
}

TEST_F(Qwen3TargetTest, DrafterMatchesNaiveReferenceAcrossCachedContextSteps) {
  for (const char* name : {"drafter", "drafter-swa"}) {
  SCOPED_TRACE(name);
  LoadReport tr, dr;
  auto target = Qwen3Target::load(*dir_ / "target", {}, &tr);
  ASSERT_TRUE(target.ok());
  auto drafter = DFlashDrafter::load(*dir_ / name, 64, {}, &dr);
  ASSERT_TRUE(drafter.ok()) << drafter.status().message();
  EXPECT_TRUE(dr.unused.empty());
  const DFlashConfig& dc = (*drafter)->config();
  const std::vector<int64_t> seq = testing::make_prompts(1, 320, 30, 30, 11)[0];
  Qwen3Target::Output all = (*target)->forward(ids_tensor(seq), dc.target_layer_ids);
  Weights tw = testing::read_weights(*dir_ / "target");
  Weights dw = testing::read_weights(*dir_ / name);
  // Step 1: context [0, 12); step 2 adds context [12, 20). Blocks start at 12 and 20.
  for (auto [from, to] : {std::pair<int64_t, int64_t>{0, 12}, {12, 20}}) {
    std::vector<int64_t> block(8, dc.mask_token_id);
    block[0] = seq[static_cast<size_t>(to)];
    at::Tensor got = (*drafter)->forward(all.features.narrow(0, from, to - from),
                                         (*target)->embed(ids_tensor(block)));
    at::Tensor want = naive_drafter(dw, tw, dc, all.features.narrow(0, 0, to).to(at::kDouble), block);
    EXPECT_LT(relative_error(got, want), 1e-5) << "context up to " << to;
    EXPECT_EQ((*drafter)->cache_length(), to);
  }
  }
}

TEST_F(Qwen3TargetTest, SlidingWindowDrafterDiffersFromTheSameWeightsRunFull) {
  // Context of 20 positions, window 5: the sliding layer must not see most of it.
  auto target = Qwen3Target::load(*dir_ / "target", {}, nullptr);
  auto full = DFlashDrafter::load(*dir_ / "drafter", 64, {}, nullptr);
  auto swa = DFlashDrafter::load(*dir_ / "drafter-swa", 64, {}, nullptr);
  ASSERT_TRUE(target.ok() && full.ok() && swa.ok());
  EXPECT_EQ((*swa)->config().sliding_layer, (std::vector<bool>{true, false}));
  EXPECT_EQ((*swa)->config().sliding_window, 5);
  const std::vector<int64_t> seq = testing::make_prompts(1, 320, 21, 21, 12)[0];
  at::Tensor features = (*target)->forward(ids_tensor(seq), (*full)->config().target_layer_ids).features;
  std::vector<int64_t> block(8, (*full)->config().mask_token_id);
  block[0] = seq[20];
  at::Tensor embedded = (*target)->embed(ids_tensor(block));
  at::Tensor a = (*full)->forward(features.narrow(0, 0, 20), embedded);
  at::Tensor b = (*swa)->forward(features.narrow(0, 0, 20), embedded);
  EXPECT_GT(relative_error(b, a), 1e-2);
}

// ---- loading --------------------------------------------------------------

TEST_F(Qwen3TargetTest, Bf16AndShardedTwinsGiveTheSameTokensAsF32) {
  ScratchDir dir("twins");
  auto spec = testing::random_target_spec();
  ASSERT_TRUE(write_tiny_target(dir / "bf16", spec, {"BF16", 0, false}).ok());
  ASSERT_TRUE(write_tiny_target(dir / "sharded", spec, {"F32", 3, false}).ok());
  ASSERT_TRUE(write_tiny_target(dir / "bf16-sharded", spec, {"BF16", 4, false}).ok());
  LoadReport r0;
  auto f32 = Qwen3Target::load(*dir_ / "target", {}, &r0);
  ASSERT_TRUE(f32.ok());
  EXPECT_EQ(r0.tensors_zero_copy, 3 + 11 * 4);  // F32 on CPU: taken straight from the mapping
  const auto prompts = testing::make_prompts(4, 320, 5, 15, 13);
  for (const char* name : {"bf16", "sharded", "bf16-sharded"}) {
    LoadReport r;
    auto twin = Qwen3Target::load(dir / name, {}, &r);
    ASSERT_TRUE(twin.ok()) << twin.status().message();
    EXPECT_EQ(r.sharded, std::string(name).find("sharded") != std::string::npos);
    for (const auto& p : prompts) {
      EXPECT_EQ(greedy(twin->get(), p, 24), greedy(f32->get(), p, 24)) << name;
      // Same values, same F32 arithmetic: identical logits.
      (*twin)->reset();
      (*f32)->reset();
      at::Tensor a = (*twin)->forward(ids_tensor(p), {}).logits;
      (*twin)->reset();
      at::Tensor b = (*f32)->forward(ids_tensor(p), {}).logits;
      (*f32)->reset();
      EXPECT_TRUE(at::equal(a, b)) << name;
    }
  }
}

// BF16 is the default compute dtype for BF16 checkpoints. Where the float32 logits are
// well apart (the oracle target by construction; the random target's positions whose
// top-2 margin is wide) it must pick the tokens float32 picks. The random target's
// near-ties are expected to flip, so it is compared teacher-forced on float32's tokens.
TEST_F(Qwen3TargetTest, Bf16ComputeGivesTheF32TokensWhereLogitsAreApart) {
  ScratchDir dir("bf16-compute");
  ComputeOptions bf16;
  bf16.dtype = at::kBFloat16;
  ASSERT_TRUE(write_tiny_target(dir / "oracle", testing::oracle_target_spec(3), {"BF16", 0, false}).ok());
  auto oracle16 = Qwen3Target::load(dir / "oracle", bf16, nullptr);
  auto oracle32 = Qwen3Target::load(dir / "oracle", {}, nullptr);
  ASSERT_TRUE(oracle16.ok() && oracle32.ok());
  for (const auto& p : testing::make_prompts(4, 64, 3, 10, 17)) {
    EXPECT_EQ(greedy(oracle16->get(), p, 24), greedy(oracle32->get(), p, 24));
  }

  auto spec = testing::random_target_spec();
  ASSERT_TRUE(write_tiny_target(dir / "bf16", spec, {"BF16", 0, false}).ok());
  LoadReport r;
  auto twin = Qwen3Target::load(dir / "bf16", bf16, &r);
  ASSERT_TRUE(twin.ok()) << twin.status().message();
  // Used in place from the mapping, or repacked in place of it for the BF16 kernel.
  EXPECT_EQ(r.tensors_zero_copy + r.tensors_repacked, r.tensors_loaded);
  EXPECT_EQ(r.bytes_copied, 0);
  auto f32 = Qwen3Target::load(*dir_ / "target", {}, nullptr);
  ASSERT_TRUE(f32.ok());
  int64_t apart = 0, total = 0;
  for (const auto& p : testing::make_prompts(6, 320, 5, 15, 13)) {
    std::vector<int64_t> seq = p;
    for (int64_t t : greedy(f32->get(), p, 24)) seq.push_back(t);
    (*f32)->reset();
    (*twin)->reset();
    at::Tensor want = (*f32)->forward(ids_tensor(seq), {}).logits;
    at::Tensor got = (*twin)->forward(ids_tensor(seq), {}).logits.to(at::kFloat);
    at::Tensor top2 = std::get<0>(want.topk(2, -1));
    const double scale = want.abs().max().item<double>();
    for (int64_t i = 0; i < want.size(0); ++i) {
      ++total;
      if ((top2[i][0] - top2[i][1]).item<double>() < 0.05 * scale) continue;
      ++apart;
      EXPECT_EQ(got[i].argmax().item<int64_t>(), want[i].argmax().item<int64_t>()) << "position " << i;
    }
  }
  EXPECT_GT(apart, total / 2) << "too few well-separated positions for the check to mean much";
}

// Every real Qwen vocabulary is a multiple of 16, but a head of any size is packed for
// the BF16 kernel (its last panel padded), and the logits keep exactly vocab columns.
TEST_F(Qwen3TargetTest, AnUntiedHeadOfAnyVocabularyIsPackedAndItsLogitsHaveVocabColumns) {
  ScratchDir dir("odd-vocab");
  ComputeOptions bf16;
  bf16.dtype = at::kBFloat16;
  auto even = testing::oracle_target_spec(3), odd = even;
  odd.vocab = even.vocab + 6;  // 70: not a multiple of 16
  ASSERT_TRUE(write_tiny_target(dir / "even", even, {"BF16", 0, false}).ok());
  ASSERT_TRUE(write_tiny_target(dir / "odd", odd, {"BF16", 0, false}).ok());
  LoadReport r_even, r_odd;
  auto even16 = Qwen3Target::load(dir / "even", bf16, &r_even);
  auto odd16 = Qwen3Target::load(dir / "odd", bf16, &r_odd);
  auto odd32 = Qwen3Target::load(dir / "odd", {}, nullptr);
  ASSERT_TRUE(even16.ok() && odd16.ok() && odd32.ok());
  if (bf16_kernel_supported()) {  // elsewhere nothing is packed: the logits' width and tokens still hold
    EXPECT_EQ(r_odd.tensors_repacked, r_even.tensors_repacked);
  }
  for (const auto& p : testing::make_prompts(3, 60, 3, 10, 19)) {
    (*odd16)->reset();
    at::Tensor logits = (*odd16)->forward(ids_tensor(p), {}).logits;
    EXPECT_EQ(logits.size(-1), odd.vocab);
    (*odd16)->reset();
    EXPECT_EQ(greedy(odd16->get(), p, 24), greedy(odd32->get(), p, 24));
  }
}

bool is_vision_or_mtp(const std::string& name) {
  return name.rfind("model.visual.", 0) == 0 || name.rfind("mtp.", 0) == 0;
}

TEST_F(Qwen3TargetTest, VlmWrappedCheckpointLoadsTextOnlyWithoutReadingVision) {
  ScratchDir dir("vlm");
  auto spec = testing::random_target_spec();
  ASSERT_TRUE(write_tiny_target(dir / "vlm", spec, {"F32", 0, true}).ok());
  // Single file: overwrite every vision / mtp tensor's bytes with 0xff (NaN in F32).
  EXPECT_EQ(testing::overwrite_tensor_bytes(dir / "vlm", is_vision_or_mtp), 5);
  auto plain = Qwen3Target::load(*dir_ / "target", {}, nullptr);
  ASSERT_TRUE(plain.ok());
  LoadReport r;
  auto vlm = Qwen3Target::load(dir / "vlm", {}, &r);
  ASSERT_TRUE(vlm.ok()) << vlm.status().message();
  EXPECT_EQ(r.skipped.size(), 5u);
  EXPECT_TRUE(r.unused.empty());
  const auto prompts = testing::make_prompts(3, 320, 5, 12, 17);
  for (const auto& p : prompts) EXPECT_EQ(greedy(vlm->get(), p, 16), greedy(plain->get(), p, 16));

  // Sharded: vision and mtp alone in shard 2, then that shard replaced by garbage. A
  // loader that opened it would fail on its header.
  testing::split_checkpoint_in_two(dir / "vlm", is_vision_or_mtp);
  testing::write_text(dir / "vlm/model-00002-of-00002.safetensors", "garbage, not safetensors");
  LoadReport rs;
  auto sharded = Qwen3Target::load(dir / "vlm", {}, &rs);
  ASSERT_TRUE(sharded.ok()) << sharded.status().message();
  ASSERT_EQ(rs.files_opened.size(), 1u);
  EXPECT_NE(rs.files_opened[0].find("model-00001-of-00002"), std::string::npos);
  for (const auto& p : prompts) EXPECT_EQ(greedy(sharded->get(), p, 16), greedy(plain->get(), p, 16));
}

TEST_F(Qwen3TargetTest, TiedEmbeddingsNeedNoLmHead) {
  ScratchDir dir("tied");
  auto spec = testing::random_target_spec();
  spec.tie_embeddings = true;
  ASSERT_TRUE(write_tiny_target(dir.path(), spec, {}).ok());
  LoadReport r;
  auto t = Qwen3Target::load(dir.path(), {}, &r);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const std::vector<int64_t> ids = {5, 9, 200, 31};
  NaiveTargetOut want = naive_target(testing::read_weights(dir.path()), (*t)->config(), ids);
  EXPECT_LT(relative_error((*t)->forward(ids_tensor(ids), {}).logits, want.logits), 1e-5);
}

void edit_config(const std::string& folder, const std::string& key, const nlohmann::json& value) {
  auto j = nlohmann::json::parse(testing::read_text(folder + "/config.json"));
  j[key] = value;
  testing::write_text(folder + "/config.json", j.dump());
}

TEST_F(Qwen3TargetTest, BrokenCheckpointsAreRefusedNamingFileAndTensor) {
  ScratchDir dir("broken");
  const auto spec = testing::random_target_spec();
  // Wrong shape: config says a wider MLP than the tensors hold.
  ASSERT_TRUE(write_tiny_target(dir / "shape", spec, {}).ok());
  edit_config(dir / "shape", "intermediate_size", 96);
  auto r = Qwen3Target::load(dir / "shape", {}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(dir / "shape/model.safetensors"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("'model.layers.0.mlp.gate_proj.weight' has shape [128, 64], expected [96, 64]"),
            std::string::npos) << r.status().message();
  // Missing tensors: config claims a fifth layer.
  ASSERT_TRUE(write_tiny_target(dir / "missing", spec, {"F32", 2, false}).ok());
  edit_config(dir / "missing", "num_hidden_layers", 5);
  r = Qwen3Target::load(dir / "missing", {}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(dir / "missing"), std::string::npos);
  EXPECT_NE(r.status().message().find("missing tensor 'model.layers.4.input_layernorm.weight'"), std::string::npos)
      << r.status().message();
  // Truncated shard.
  ASSERT_TRUE(write_tiny_target(dir / "trunc", spec, {}).ok());
  std::string bytes = testing::read_text(dir / "trunc/model.safetensors");
  testing::write_text(dir / "trunc/model.safetensors", bytes.substr(0, bytes.size() - 1000));
  r = Qwen3Target::load(dir / "trunc", {}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(dir / "trunc/model.safetensors"), std::string::npos);
  EXPECT_NE(r.status().message().find("lm_head.weight"), std::string::npos) << r.status().message();
  // Bad JSON.
  ASSERT_TRUE(write_tiny_target(dir / "json", spec, {}).ok());
  testing::write_text(dir / "json/config.json", "{\"hidden_size\": 64,");
  r = Qwen3Target::load(dir / "json", {}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(dir / "json/config.json"), std::string::npos);
  // A drafter made for a target of another hidden size is named as such, before any weight.
  ASSERT_TRUE(write_tiny_drafter(dir / "drafter", testing::random_drafter_spec(), {}).ok());
  auto d = DFlashDrafter::load(dir / "drafter", 32, {}, nullptr);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("drafter hidden_size 64 differs from the target's 32"), std::string::npos)
      << d.status().message();
  // One whose fc does not match the target's features: three target layers, fc made for two.
  nlohmann::json config = nlohmann::json::parse(testing::read_text(dir / "drafter/config.json"));
  config["dflash_config"]["target_layer_ids"].push_back(0);
  testing::write_text(dir / "drafter/config.json", config.dump());
  d = DFlashDrafter::load(dir / "drafter", 64, {}, nullptr);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("'fc.weight' has shape [64, 128], expected [64, 192]"), std::string::npos)
      << d.status().message();
}

}  // namespace
}  // namespace ferry::eval
