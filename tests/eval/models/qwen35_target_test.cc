// The Qwen3.5 hybrid target against a naive re-implementation written here from the
// reference math (../shared/reference/qwen35.md §3-§5: (1+w) norms, per-head [q; gate]
// rows, RoPE on the leading quarter, causal conv then SiLU on q|k|v, decay before the
// delta read, output read after the write), run one token at a time in double
// precision with explicit per-head loops; rollback against full recompute; loading of
// the VLM layout (vision / MTP bytes garbage, never read), BF16 and sharded twins; the
// speculative loop on hybrid targets is in speculative_decoder_test.cc.
#include "jobs/eval/models/qwen35_target.h"

#include <ATen/Parallel.h>

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "jobs/eval/cpu/bf16_linear.h"
#include "jobs/eval/models/dflash_drafter.h"
#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/run/speculative_decoder.h"
#include "jobs/eval/io/weight_loader.h"
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
// ---- naive reference, one token at a time, double ---------------------------

double softplus(double x) { return std::log1p(std::exp(x)); }

// (1 + w) RMSNorm of a vector.
at::Tensor rms1p(const at::Tensor& x, const at::Tensor& w, double eps) {
  return x / std::sqrt((x * x).mean().item<double>() + eps) * (1.0 + w);
}

struct NaiveModel {
  const Weights& w;
  const Qwen35Config& c;
  // Per layer: attention keys/values so far, or GDN conv rows and state.
  std::vector<std::vector<at::Tensor>> keys, values;  // each [nkv, hd]
  std::vector<std::vector<at::Tensor>> conv_rows;     // each [C]
  std::vector<at::Tensor> state;                      // [Hv, dk, dv]
  int64_t pos = 0;

  NaiveModel(const Weights& weights, const Qwen35Config& config) : w(weights), c(config) {
    const auto L = static_cast<size_t>(c.text.num_hidden_layers);
    keys.resize(L);
    values.resize(L);
    conv_rows.resize(L);
    state.resize(L);
    const int64_t channels =
        2 * c.linear_num_key_heads * c.linear_key_head_dim + c.linear_num_value_heads * c.linear_value_head_dim;
    for (size_t l = 0; l < L; ++l) {
      for (int64_t j = 0; j + 1 < c.linear_conv_kernel_dim; ++j) {
        conv_rows[l].push_back(at::zeros({channels}, at::kDouble));
      }
      state[l] = at::zeros({c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim}, at::kDouble);
    }
  }

  at::Tensor gdn(size_t l, const std::string& p, const at::Tensor& h) {
    const int64_t hk = c.linear_num_key_heads, hv = c.linear_num_value_heads;
    const int64_t dk = c.linear_key_head_dim, dv = c.linear_value_head_dim, kk = c.linear_conv_kernel_dim;
    at::Tensor qkv = at::mv(w.at(p + "in_proj_qkv.weight"), h);
    at::Tensor z = at::mv(w.at(p + "in_proj_z.weight"), h);
    at::Tensor b = at::mv(w.at(p + "in_proj_b.weight"), h);
    at::Tensor a = at::mv(w.at(p + "in_proj_a.weight"), h);
    conv_rows[l].push_back(qkv);
    const int64_t channels = qkv.size(0);
    at::Tensor y = at::zeros({channels}, at::kDouble);
    const at::Tensor& cw = w.at(p + "conv1d.weight");  // [C, 1, K]
    const size_t n = conv_rows[l].size();
    for (int64_t j = 0; j < kk; ++j) {
      // Tap j multiplies the row K-1-j steps back (tap K-1 = this token).
      y += cw.select(1, 0).select(1, j) * conv_rows[l][n - static_cast<size_t>(kk) + static_cast<size_t>(j)];
    }
    conv_rows[l].erase(conv_rows[l].begin());
    y = y * at::sigmoid(y);
    at::Tensor out = at::zeros({hv * dv}, at::kDouble);
    for (int64_t head = 0; head < hv; ++head) {
      const int64_t kh = head / (hv / hk);
      at::Tensor q = y.narrow(0, kh * dk, dk);
      at::Tensor k = y.narrow(0, hk * dk + kh * dk, dk);
      at::Tensor v = y.narrow(0, 2 * hk * dk + head * dv, dv);
      q = q / std::sqrt((q * q).sum().item<double>() + 1e-6) / std::sqrt(static_cast<double>(dk));
      k = k / std::sqrt((k * k).sum().item<double>() + 1e-6);
      const double beta = 1.0 / (1.0 + std::exp(-b[head].item<double>()));
      const double g = -std::exp(w.at(p + "A_log")[head].item<double>()) *
                       softplus(a[head].item<double>() + w.at(p + "dt_bias")[head].item<double>());
      at::Tensor s = state[l][head] * std::exp(g);  // [dk, dv]
      at::Tensor kv = at::mv(s.t(), k);
      at::Tensor delta = (v - kv) * beta;
      s = s + at::outer(k, delta);
      state[l][head].copy_(s);
      at::Tensor o = at::mv(s.t(), q);
      o = o / std::sqrt((o * o).mean().item<double>() + c.text.rms_norm_eps) * w.at(p + "norm.weight");
      at::Tensor zh = z.narrow(0, head * dv, dv);
      out.narrow(0, head * dv, dv).copy_(o * zh * at::sigmoid(zh));
    }
    return at::mv(w.at(p + "out_proj.weight"), out);
  }

  at::Tensor rope(const at::Tensor& x) {  // x: [heads, hd]
    at::Tensor out = x.clone();
    const int64_t rot = c.rotary_dim, half = rot / 2;
    for (int64_t i = 0; i < half; ++i) {
      double angle = static_cast<double>(pos) * std::pow(c.text.rope_theta, -2.0 * static_cast<double>(i) / rot);
      at::Tensor x1 = x.select(1, i), x2 = x.select(1, i + half);
      out.select(1, i).copy_(x1 * std::cos(angle) - x2 * std::sin(angle));
      out.select(1, i + half).copy_(x2 * std::cos(angle) + x1 * std::sin(angle));
    }
    return out;
  }

  at::Tensor attention(size_t l, const std::string& p, const at::Tensor& h) {
    const DecoderConfig& t = c.text;
    const int64_t nh = t.num_attention_heads, nkv = t.num_key_value_heads, hd = t.head_dim;
    at::Tensor qg = at::mv(w.at(p + "q_proj.weight"), h).view({nh, 2 * hd});
    at::Tensor q = at::empty({nh, hd}, at::kDouble), gate = qg.narrow(1, hd, hd);
    for (int64_t i = 0; i < nh; ++i)
      q[i].copy_(rms1p(qg[i].narrow(0, 0, hd), w.at(p + "q_norm.weight"), t.rms_norm_eps));
    at::Tensor kr = at::mv(w.at(p + "k_proj.weight"), h).view({nkv, hd});
    at::Tensor k = at::empty({nkv, hd}, at::kDouble);
    for (int64_t i = 0; i < nkv; ++i) k[i].copy_(rms1p(kr[i], w.at(p + "k_norm.weight"), t.rms_norm_eps));
    keys[l].push_back(rope(k));
    values[l].push_back(at::mv(w.at(p + "v_proj.weight"), h).view({nkv, hd}));
    q = rope(q);
    at::Tensor out = at::empty({nh, hd}, at::kDouble);
    for (int64_t i = 0; i < nh; ++i) {
      const int64_t kvh = i / (nh / nkv);
      std::vector<double> scores;
      double top = -1e300;
      for (const at::Tensor& kk : keys[l]) {
        scores.push_back(at::dot(q[i], kk[kvh]).item<double>() / std::sqrt(static_cast<double>(hd)));
        top = std::max(top, scores.back());
      }
      double sum = 0;
      for (double& s : scores) sum += (s = std::exp(s - top));
      at::Tensor o = at::zeros({hd}, at::kDouble);
      for (size_t j = 0; j < scores.size(); ++j) o += values[l][j][kvh] * (scores[j] / sum);
      out[i].copy_(o * at::sigmoid(gate[i]));
    }
    return at::mv(w.at(p + "o_proj.weight"), out.view({nh * hd}));
  }

  // One token: returns logits [V]; appends every layer's output (last one final-normed).
  at::Tensor step(int64_t id, std::vector<at::Tensor>* layer_out) {
    const DecoderConfig& t = c.text;
    at::Tensor x = w.at("embed_tokens.weight")[id].clone();
    for (int64_t l = 0; l < t.num_hidden_layers; ++l) {
      const std::string p = "layers." + std::to_string(l) + ".";
      at::Tensor h = rms1p(x, w.at(p + "input_layernorm.weight"), t.rms_norm_eps);
      const bool linear = c.linear_layer[static_cast<size_t>(l)];
      x = x + (linear ? gdn(static_cast<size_t>(l), p + "linear_attn.", h)
                      : attention(static_cast<size_t>(l), p + "self_attn.", h));
      at::Tensor m = rms1p(x, w.at(p + "post_attention_layernorm.weight"), t.rms_norm_eps);
      at::Tensor g = at::mv(w.at(p + "mlp.gate_proj.weight"), m);
      x = x + at::mv(w.at(p + "mlp.down_proj.weight"), g * at::sigmoid(g) * at::mv(w.at(p + "mlp.up_proj.weight"), m));
      layer_out->push_back(l + 1 == t.num_hidden_layers ? rms1p(x, w.at("norm.weight"), t.rms_norm_eps) : x);
    }
    ++pos;
    const at::Tensor& head = t.tie_word_embeddings ? w.at("embed_tokens.weight") : w.at("lm_head.weight");
    return at::mv(head, rms1p(x, w.at("norm.weight"), t.rms_norm_eps));
  }
};

class Qwen35TargetTest : public testing::ModelSuiteTest<Qwen35TargetTest> {
 public:
  static void write_models() {
    at::set_num_threads(1);
    ASSERT_TRUE(write_tiny_target(*dir_ / "target", testing::hybrid_target_spec(), {}).ok());
  }

 protected:
  static std::unique_ptr<Qwen35Target> load(const std::string& folder, LoadReport* report = nullptr) {
    auto t = Qwen35Target::load(folder, {}, report);
    EXPECT_TRUE(t.ok()) << t.status().message();
    return t.ok() ? std::move(*t) : nullptr;
  }
};

TEST_F(Qwen35TargetTest, MultiTokenForwardsMatchNaiveTokenByTokenReference) {
  auto target = load(*dir_ / "target");
  ASSERT_TRUE(target);
  const Qwen35Config& c = target->hybrid_config();
  ASSERT_EQ(c.linear_layer, (std::vector<bool>{true, true, true, false}));
  ASSERT_EQ(c.rotary_dim, 4);
  const Weights w = testing::read_weights(*dir_ / "target", "model.");
  const auto seq = testing::make_prompts(1, 320, 23, 23, 7)[0];
  NaiveModel naive(w, c);
  std::vector<at::Tensor> logits, features[4];
  for (int64_t id : seq) {
    std::vector<at::Tensor> outs;
    logits.push_back(naive.step(id, &outs));
    for (size_t l = 0; l < 4; ++l) features[l].push_back(outs[l]);
  }
  at::Tensor want_logits = at::stack(logits);
  at::Tensor want_features = at::cat({at::stack(features[0]), at::stack(features[1]), at::stack(features[2]),
                                      at::stack(features[3])}, -1);
  // Chunks of 9, 1, 6, 7: prefill, a decode step, verify-like blocks; states carry over.
  std::vector<at::Tensor> got_logits, got_features;
  size_t begin = 0;
  for (size_t len : {9, 1, 6, 7}) {
    std::vector<int64_t> chunk(seq.begin() + static_cast<long>(begin), seq.begin() + static_cast<long>(begin + len));
    TargetModel::Output out = target->forward(ids_tensor(chunk), {0, 1, 2, 3});
    got_logits.push_back(out.logits);
    got_features.push_back(out.features);
    begin += len;
  }
  EXPECT_EQ(target->cache_length(), 23);
  EXPECT_LT(relative_error(at::cat(got_features, 0), want_features), 1e-4);
  EXPECT_LT(relative_error(at::cat(got_logits, 0), want_logits), 1e-4);
  // Only the last rows' logits when asked.
  target->reset();
  at::Tensor last = target->forward(ids_tensor(seq), {}, 2).logits;
  EXPECT_LT(relative_error(last, want_logits.narrow(0, 21, 2)), 1e-4);
}

TEST_F(Qwen35TargetTest, GdnLayerMatchesNaiveRecurrenceAcrossCalls) {
  // One GDN layer alone, dimensions unlike the target's (GVA 3:1, conv kernel 3).
  Qwen35Config c;
  c.text.hidden_size = 24;
  c.text.num_hidden_layers = 1;
  c.linear_num_key_heads = 2;
  c.linear_num_value_heads = 6;
  c.linear_key_head_dim = 8;
  c.linear_value_head_dim = 4;
  c.linear_conv_kernel_dim = 3;
  const GdnDims d = gdn_dims_of(c);
  const int64_t channels = d.conv_channels(), vd = d.value_heads * d.value_dim;
  at::manual_seed(5);
  GdnWeights gw;
  gw.in_qkv = at::randn({channels, d.hidden}) * 0.3;
  gw.in_z = at::randn({vd, d.hidden}) * 0.3;
  gw.in_b = at::randn({d.value_heads, d.hidden}) * 0.3;
  gw.in_a = at::randn({d.value_heads, d.hidden}) * 0.3;
  at::Tensor conv = at::randn({channels, 1, d.conv_kernel}) * 0.5;
  gw.conv = conv.view({channels, d.conv_kernel}).t().contiguous();
  at::Tensor a_log = at::rand({d.value_heads}) - 2.0;
  gw.neg_a = -at::exp(a_log);
  gw.dt_bias = at::randn({d.value_heads}) * 0.3;
  gw.norm = 1.0 + at::randn({d.value_dim}) * 0.1;
  gw.out = at::randn({d.hidden, vd}) * 0.3;
  Weights w = {{"in_proj_qkv.weight", gw.in_qkv.to(at::kDouble)}, {"in_proj_z.weight", gw.in_z.to(at::kDouble)},
               {"in_proj_b.weight", gw.in_b.to(at::kDouble)},     {"in_proj_a.weight", gw.in_a.to(at::kDouble)},
               {"conv1d.weight", conv.to(at::kDouble)},           {"A_log", a_log.to(at::kDouble)},
               {"dt_bias", gw.dt_bias.to(at::kDouble)},           {"norm.weight", gw.norm.to(at::kDouble)},
               {"out_proj.weight", gw.out.to(at::kDouble)}};
  NaiveModel naive(w, c);
  at::Tensor x = at::randn({11, d.hidden});
  GdnState state = gdn_initial_state(d, at::kCPU);
  at::Tensor got =
      at::cat({gdn_forward(d, gw, x.narrow(0, 0, 7), &state), gdn_forward(d, gw, x.narrow(0, 7, 4), &state)});
  std::vector<at::Tensor> want;
  for (int64_t t = 0; t < 11; ++t) want.push_back(naive.gdn(0, "", x[t].to(at::kDouble)));
  EXPECT_LT(relative_error(got, at::stack(want)), 1e-5);
  EXPECT_LT(relative_error(state.state, naive.state[0]), 1e-5);
  // The CPU loop and the ATen form (used off the CPU) agree, and neither touches `initial`.
  at::Tensor q = at::randn({5, 6, 8}), k = at::randn({5, 6, 8}), v = at::randn({5, 6, 4});
  at::Tensor decay = at::rand({5, 6}), beta = at::rand({5, 6}), initial = at::randn({6, 8, 4});
  const at::Tensor before = initial.clone();
  at::Tensor s_loop, s_aten;
  at::Tensor o_loop = gated_delta_rule(q, k, v, decay, beta, initial, &s_loop);
  at::Tensor o_aten = gated_delta_rule_generic(q, k, v, decay, beta, initial, &s_aten);
  EXPECT_LT(relative_error(o_loop, o_aten), 1e-5);
  EXPECT_LT(relative_error(s_loop, s_aten), 1e-5);
  EXPECT_TRUE(at::equal(initial, before));
}

// At Qwen3.6-27B's head size (128 x 128) the CPU loop splits heads over the intra-op
// threads: the same outputs and final state as one thread, and as the ATen form.
TEST_F(Qwen35TargetTest, RecurrenceSplitOverThreadsMatchesOneThread) {
  at::manual_seed(9);
  // Qwen3.6-27B's 48 value heads of 128 x 128 at a verify's 16 steps: 12 chunks of 4
  // heads, so two threads share them.
  const int64_t t = 16, hv = 48, dk = 128, dv = 128;
  at::Tensor q = at::randn({t, hv, dk}), k = at::randn({t, hv, dk}), v = at::randn({t, hv, dv});
  k = k / k.norm(2, -1, /*keepdim=*/true);  // as the layer feeds it: L2-normalised keys
  at::Tensor decay = at::rand({t, hv}), beta = at::rand({t, hv}), initial = at::randn({hv, dk, dv});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  at::Tensor s_one, s_split, s_aten;
  at::Tensor o_one = gated_delta_rule(q, k, v, decay, beta, initial, &s_one);
  at::set_num_threads(2);
  at::Tensor o_split = gated_delta_rule(q, k, v, decay, beta, initial, &s_split);
  at::Tensor o_aten = gated_delta_rule_generic(q, k, v, decay, beta, initial, &s_aten);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(o_split, o_one));  // each head computed alike, wherever it ran
  EXPECT_TRUE(at::equal(s_split, s_one));
  EXPECT_LT(relative_error(o_split, o_aten), 1e-5);
  EXPECT_LT(relative_error(s_split, s_aten), 1e-5);
}

// The vector loop (value widths a multiple of 16: whole and partial blocks of 128) and
// the scalar one (8) against the ATen form, with an output and as a rollback's replay
// (no q: the state alone, which must be the one the full step leaves).
TEST_F(Qwen35TargetTest, RecurrenceAtEveryValueWidthAndInReplayMatchesTheAtenForm) {
  at::manual_seed(11);
  for (int64_t dv : {8, 16, 48, 144}) {
    const int64_t t = 5, hv = 4, dk = 32;
    at::Tensor q = at::randn({t, hv, dk}), k = at::randn({t, hv, dk}), v = at::randn({t, hv, dv});
    k = k / k.norm(2, -1, /*keepdim=*/true);
    at::Tensor decay = at::rand({t, hv}), beta = at::rand({t, hv}), initial = at::randn({hv, dk, dv});
    at::Tensor s_step, s_replay, s_aten;
    at::Tensor o_step = gated_delta_rule(q, k, v, decay, beta, initial, &s_step);
    at::Tensor o_replay = gated_delta_rule(at::Tensor(), k, v, decay, beta, initial, &s_replay);
    at::Tensor o_aten = gated_delta_rule_generic(q, k, v, decay, beta, initial, &s_aten);
    EXPECT_LT(relative_error(o_step, o_aten), 1e-5) << "dv " << dv;
    EXPECT_LT(relative_error(s_step, s_aten), 1e-5) << "dv " << dv;
    EXPECT_FALSE(o_replay.defined()) << "dv " << dv;
    EXPECT_TRUE(at::equal(s_replay, s_step)) << "dv " << dv;
  }
}

// The chunked form (what a prefill of 64 tokens or more runs) against the rule step by
// step in float64: chunk edges (63, 64, 65 tokens, a partial last chunk), several chunks
// up to an 8,192-token prompt,
// decays from ~0 (one that underflowed to exactly 0 too) to 1, and the L2-normalised keys
// the layer feeds it; `initial` untouched.
TEST_F(Qwen35TargetTest, ChunkedRuleMatchesTheStepByStepRuleInFloat64) {
  at::manual_seed(13);
  for (int64_t t : {1, 63, 64, 65, 200, 1000, 8192}) {
    const int64_t hv = 4, dk = 32, dv = 48;
    at::Tensor q = at::randn({t, hv, dk}) / std::sqrt(static_cast<double>(dk)), k = at::randn({t, hv, dk});
    k = k / k.norm(2, -1, /*keepdim=*/true);
    at::Tensor v = at::randn({t, hv, dv});
    at::Tensor decay = at::rand({t, hv}).pow(0.25), beta = at::rand({t, hv}), initial = at::randn({hv, dk, dv});
    if (t > 100) {
      decay.index_put_({50, 1}, 0.0);   // exp(g) underflowed
      decay.index_put_({70, 2}, 1e-30);
    }
    const at::Tensor before = initial.clone();
    at::Tensor s_chunk, s_ref;
    at::Tensor o_chunk = gated_delta_rule_chunked(q, k, v, decay, beta, initial, &s_chunk);
    at::Tensor o_ref = gated_delta_rule_generic(q.to(at::kDouble), k.to(at::kDouble), v.to(at::kDouble),
                                                decay.to(at::kDouble), beta.to(at::kDouble),
                                                initial.to(at::kDouble), &s_ref);
    EXPECT_LT(relative_error(o_chunk, o_ref), 1e-5) << "T " << t;
    EXPECT_LT(relative_error(s_chunk, s_ref), 1e-5) << "T " << t;
    EXPECT_TRUE(at::equal(initial, before)) << "T " << t;
    // And through the dispatch, switched on: from kGdnChunkedMinTokens on, gated_delta_rule is it.
    set_gdn_chunked_enabled(true);
    at::Tensor s_rule;
    at::Tensor o_rule = gated_delta_rule(q, k, v, decay, beta, initial, &s_rule);
    set_gdn_chunked_enabled(kGdnChunkedByDefault);
    if (t >= kGdnChunkedMinTokens) {
      EXPECT_TRUE(at::equal(o_rule, o_chunk)) << "T " << t;
    }
    EXPECT_LT(relative_error(o_rule, o_ref), 1e-5) << "T " << t;
  }
}

// At Qwen3.6-27B's head shape (48 value heads of 128 x 128), 2,048 prompt tokens: the
// chunked prefill and the step-by-step CPU loop give the same outputs and state within
// float32 rounding.
TEST_F(Qwen35TargetTest, ChunkedPrefillAtTheRealHeadShapeMatchesTheStepByStepLoop) {
  at::manual_seed(17);
  const int64_t t = 2048, hv = 48, dk = 128, dv = 128;
  at::Tensor q = at::randn({t, hv, dk}) / std::sqrt(static_cast<double>(dk)), k = at::randn({t, hv, dk});
  k = k / k.norm(2, -1, /*keepdim=*/true);
  at::Tensor v = at::randn({t, hv, dv}), decay = at::rand({t, hv}).pow(0.1), beta = at::rand({t, hv});
  at::Tensor initial = at::zeros({hv, dk, dv});
  at::Tensor s_chunk, s_loop;
  at::Tensor o_chunk = gated_delta_rule_chunked(q, k, v, decay, beta, initial, &s_chunk);
  set_gdn_chunked_enabled(false);
  at::Tensor o_loop = gated_delta_rule(q, k, v, decay, beta, initial, &s_loop);
  set_gdn_chunked_enabled(kGdnChunkedByDefault);
  EXPECT_LT(relative_error(o_chunk, o_loop), 1e-4);
  EXPECT_LT(relative_error(s_chunk, s_loop), 1e-4);
}

// prefill() runs a prompt longer than kPrefillChunk in chunks: the same logits,
// features and cache as one forward of it, so the next step goes on alike.
TEST_F(Qwen35TargetTest, PrefillInChunksMatchesOneForward) {
  auto chunked = load(*dir_ / "target");
  auto whole = load(*dir_ / "target");
  ASSERT_TRUE(chunked && whole);
  const int64_t n = 2 * kPrefillChunk + 37;
  const auto seq = testing::make_prompts(1, 320, n + 3, n + 3, 5)[0];
  const at::Tensor prompt = ids_tensor(std::vector<int64_t>(seq.begin(), seq.begin() + n));
  const at::Tensor next = ids_tensor(std::vector<int64_t>(seq.begin() + n, seq.end()));
  const std::vector<int64_t> capture = {0, 3};
  TargetModel::Output a = prefill(chunked.get(), prompt, capture);
  TargetModel::Output b = whole->forward(prompt, capture, 1);
  EXPECT_EQ(chunked->cache_length(), n);
  EXPECT_EQ(a.logits.sizes(), b.logits.sizes());
  EXPECT_EQ(a.features.sizes(), b.features.sizes());
  EXPECT_LT(relative_error(a.logits, b.logits), 1e-4);
  EXPECT_LT(relative_error(a.features, b.features), 1e-4);
  EXPECT_LT(relative_error(chunked->forward(next, capture).logits, whole->forward(next, capture).logits), 1e-4);
}

// An 8,192-token prompt (long coding prompts run 1-8k): prefill() in 64-token chunks with
// the Gated DeltaNet in its chunked form and step by step gives the same logits,
// features and cache, and the next token's logits alike.
TEST_F(Qwen35TargetTest, An8kTokenPromptPrefillsAlikeWithTheChunkedAndTheStepByStepRule) {
  auto chunked = load(*dir_ / "target");
  auto stepped = load(*dir_ / "target");
  ASSERT_TRUE(chunked && stepped);
  const int64_t n = 8192;
  const auto seq = testing::make_prompts(1, 320, n + 1, n + 1, 23)[0];
  const at::Tensor prompt = ids_tensor(std::vector<int64_t>(seq.begin(), seq.begin() + n));
  const at::Tensor next = ids_tensor({seq[n]});
  const std::vector<int64_t> capture = {0, 3};
  set_gdn_chunked_enabled(true);
  TargetModel::Output a = prefill(chunked.get(), prompt, capture);
  at::Tensor next_a = chunked->forward(next, capture).logits;
  set_gdn_chunked_enabled(false);
  TargetModel::Output b = prefill(stepped.get(), prompt, capture);
  at::Tensor next_b = stepped->forward(next, capture).logits;
  set_gdn_chunked_enabled(kGdnChunkedByDefault);
  EXPECT_EQ(chunked->cache_length(), n + 1);
  EXPECT_EQ(stepped->cache_length(), n + 1);
  EXPECT_LT(relative_error(a.logits, b.logits), 1e-4);
  EXPECT_LT(relative_error(a.features, b.features), 1e-4);
  EXPECT_LT(relative_error(next_a, next_b), 1e-4);
  EXPECT_TRUE(at::equal(next_a.argmax(-1), next_b.argmax(-1)));
}

TEST_F(Qwen35TargetTest, CachedStepsWithRollbackMatchFullRecompute) {
  auto t = load(*dir_ / "target");
  auto full = load(*dir_ / "target");
  ASSERT_TRUE(t && full);
  std::mt19937_64 gen(99);
  const auto seq = testing::make_prompts(1, 320, 200, 200, 8)[0];
  // Prefill, then blocks of b tokens of which a random prefix is kept (the rest rolled back).
  int64_t start = 5;
  t->forward(ids_tensor(std::vector<int64_t>(seq.begin(), seq.begin() + start)), {});
  int checked = 0;
  double worst = 0;
  while (start + 16 < static_cast<int64_t>(seq.size())) {
    const int64_t b = 1 + static_cast<int64_t>(gen() % 16);
    std::vector<int64_t> block(seq.begin() + start, seq.begin() + start + b);
    TargetModel::Output step = t->forward(ids_tensor(block), {0, 3});
    full->reset();
    TargetModel::Output whole =
        full->forward(ids_tensor(std::vector<int64_t>(seq.begin(), seq.begin() + start + b)), {0, 3});
    worst = std::max(worst, relative_error(step.logits, whole.logits.narrow(0, start, b)));
    worst = std::max(worst, relative_error(step.features, whole.features.narrow(0, start, b)));
    const int64_t keep = 1 + static_cast<int64_t>(gen() % static_cast<uint64_t>(b));
    t->crop(start + keep);
    EXPECT_EQ(t->cache_length(), start + keep);
    start += keep;
    ++checked;
  }
  EXPECT_GT(checked, 15);
  EXPECT_LT(worst, 1e-4);
  // A crop below where the last forward began is a bug in the caller: refused loudly.
  EXPECT_THROW(t->crop(start - 20), c10::Error);
}

TEST_F(Qwen35TargetTest, RollbackIsNeededNotJustKvCrop) {
  // Guards the rollback itself: cropping only the attention caches would leave GDN states
  // that have seen the rejected tokens, and the next logits would differ.
  auto t = load(*dir_ / "target");
  auto fresh = load(*dir_ / "target");
  ASSERT_TRUE(t && fresh);
  const auto seq = testing::make_prompts(1, 320, 20, 20, 9)[0];
  std::vector<int64_t> prefix(seq.begin(), seq.begin() + 12);
  t->forward(ids_tensor(prefix), {});
  t->forward(ids_tensor(std::vector<int64_t>(seq.begin() + 12, seq.end())), {});
  t->crop(12);
  at::Tensor after = t->forward(ids_tensor({5}), {}).logits;
  prefix.push_back(5);
  at::Tensor want = fresh->forward(ids_tensor(prefix), {}, 1).logits;
  EXPECT_LT(relative_error(after, want), 1e-5);
}

TEST_F(Qwen35TargetTest, VlmLayoutReadsNoVisionOrMtpBytesAndMatchesCausalLmLayout) {
  ScratchDir dir("q35vlm");
  auto spec = testing::hybrid_target_spec();
  ASSERT_TRUE(write_tiny_target(dir / "vlm", spec, {"F32", 0, true}).ok());
  auto is_extra = [](const std::string& n) { return n.rfind("model.visual.", 0) == 0 || n.rfind("mtp.", 0) == 0; };
  EXPECT_EQ(testing::overwrite_tensor_bytes(dir / "vlm", is_extra), 5);
  auto plain = load(*dir_ / "target");
  LoadReport r;
  auto vlm = load(dir / "vlm", &r);
  ASSERT_TRUE(plain && vlm);
  EXPECT_TRUE(vlm->config().vlm_wrapped);
  EXPECT_EQ(r.skipped.size(), 5u);
  EXPECT_TRUE(r.unused.empty());
  const auto prompts = testing::make_prompts(3, 320, 5, 12, 17);
  for (const auto& p : prompts) EXPECT_EQ(greedy(vlm.get(), p, 16), greedy(plain.get(), p, 16));
  // Vision and MTP alone in a second shard that is not even safetensors.
  testing::split_checkpoint_in_two(dir / "vlm", is_extra);
  testing::write_text(dir / "vlm/model-00002-of-00002.safetensors", "garbage, not safetensors");
  LoadReport rs;
  auto sharded = load(dir / "vlm", &rs);
  ASSERT_TRUE(sharded);
  ASSERT_EQ(rs.files_opened.size(), 1u);
  for (const auto& p : prompts) EXPECT_EQ(greedy(sharded.get(), p, 16), greedy(plain.get(), p, 16));
  // Image placeholders in a prompt are refused by name, not run as text.
  const int64_t image = spec.vocab - 5;
  auto j = nlohmann::json::parse(testing::read_text(dir / "vlm/config.json"));
  j["image_token_id"] = image;
  testing::write_text(dir / "vlm/config.json", j.dump());
  auto with_image = load(dir / "vlm");
  ASSERT_TRUE(with_image);
  DecodeOptions o;
  o.block_size = 1;
  auto refused = speculative_decode(with_image.get(), nullptr, {1, image, 2}, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("vision inputs are not supported"), std::string::npos);
}

TEST_F(Qwen35TargetTest, Bf16AndShardedTwinsGiveTheSameTokensAsF32) {
  ScratchDir dir("q35twins");
  auto spec = testing::hybrid_target_spec();
  ASSERT_TRUE(write_tiny_target(dir / "bf16", spec, {"BF16", 0, false}).ok());
  ASSERT_TRUE(write_tiny_target(dir / "bf16-sharded", spec, {"BF16", 3, true}).ok());
  auto f32 = load(*dir_ / "target");
  ASSERT_TRUE(f32);
  const auto prompts = testing::make_prompts(3, 320, 5, 15, 13);
  for (const char* name : {"bf16", "bf16-sharded"}) {
    LoadReport r;
    auto twin = load(dir / name, &r);
    ASSERT_TRUE(twin);
    EXPECT_EQ(r.sharded, std::string(name) == "bf16-sharded");
    for (const auto& p : prompts) {
      EXPECT_EQ(greedy(twin.get(), p, 20), greedy(f32.get(), p, 20)) << name;
      twin->reset();
      f32->reset();
      // Same values, same F32 arithmetic: identical logits.
      EXPECT_TRUE(at::equal(twin->forward(ids_tensor(p), {}).logits, f32->forward(ids_tensor(p), {}).logits)) << name;
    }
  }
  // Computing in BF16 uses BF16 matrices as mapped (no copy) or repacked in place of
  // their pages for the BF16 kernel, and still decodes.
  ComputeOptions bf16;
  bf16.dtype = at::kBFloat16;
  LoadReport r;
  auto mapped = Qwen35Target::load(dir / "bf16", bf16, &r);
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  EXPECT_GT(r.tensors_zero_copy + r.tensors_repacked, r.tensors_loaded / 2);
  if (bf16_kernel_supported()) {
    // Every matrix whose rows come in 16s: per GDN layer in_proj_qkv, in_proj_z,
    // out_proj (in_proj_b/a have 4 rows), per attention layer q/k/v/o, per layer the
    // three MLP matrices, and the untied lm_head.
    EXPECT_EQ(r.tensors_repacked, 3 * (3 + 3) + (4 + 3) + 1);
  }
  EXPECT_EQ(greedy(mapped->get(), prompts[0], 8).size(), 8u);
}

// The projections on ferry's packed BF16 kernel (on an AVX512-BF16 CPU) against the same
// BF16 weights on libtorch's matmuls and against float32: the oracle's logits are far
// apart, so all three must pick the same tokens, and the two BF16 paths differ only in
// the order of float32 sums.
TEST_F(Qwen35TargetTest, Bf16OnTheRepackedKernelGivesTheF32Tokens) {
  if (!bf16_kernel_supported()) GTEST_SKIP() << "this CPU has no AVX512-BF16: nothing is packed";
  ScratchDir dir("q35packed");
  ASSERT_TRUE(write_tiny_target(dir / "oracle", testing::hybrid_oracle_target_spec(3), {"BF16", 0, false}).ok());
  ComputeOptions bf16;
  bf16.dtype = at::kBFloat16;
  LoadReport r;
  auto packed = Qwen35Target::load(dir / "oracle", bf16, &r);
  set_bf16_kernel_enabled(false);
  auto plain = Qwen35Target::load(dir / "oracle", bf16, nullptr);
  set_bf16_kernel_enabled(true);
  auto f32 = Qwen35Target::load(dir / "oracle", {}, nullptr);
  ASSERT_TRUE(packed.ok() && plain.ok() && f32.ok());
  EXPECT_GT(r.tensors_repacked, 0);
  for (const auto& p : testing::make_prompts(4, 64, 3, 10, 17)) {
    const auto want = greedy(f32->get(), p, 24);
    EXPECT_EQ(greedy(packed->get(), p, 24), want);
    EXPECT_EQ(greedy(plain->get(), p, 24), want);
    std::vector<int64_t> seq = p;
    seq.insert(seq.end(), want.begin(), want.end());
    (*packed)->reset();
    (*plain)->reset();
    at::Tensor a = (*packed)->forward(ids_tensor(seq), {}).logits.to(at::kFloat);
    at::Tensor b = (*plain)->forward(ids_tensor(seq), {}).logits.to(at::kFloat);
    EXPECT_LT(relative_error(a, b), 0.02);
  }
}

TEST_F(Qwen35TargetTest, BrokenCheckpointsNameFileAndTensor) {
  ScratchDir dir("q35bad");
  auto spec = testing::hybrid_target_spec();
  spec.linear_value_dim = 4;  // weights of another shape than config.json says
  ASSERT_TRUE(write_tiny_target(dir / "shape", spec, {}).ok());
  auto j = nlohmann::json::parse(testing::read_text(dir / "shape/config.json"));
  j["linear_value_head_dim"] = 8;
  testing::write_text(dir / "shape/config.json", j.dump());
  auto r = Qwen35Target::load(dir / "shape", {}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("linear_attn.in_proj_qkv.weight"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("model.safetensors"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace ferry::eval
