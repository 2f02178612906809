#include "jobs/eval/models/qwen35_target.h"

#include <c10/util/BFloat16.h>

#include <algorithm>
#include <cmath>

#include "jobs/eval/cpu/compute_threads.h"

namespace ferry::eval {
namespace {

// RoPE on the leading rotary dims only. x: [heads, T, head_dim]
at::Tensor partial_rope(const at::Tensor& x, const RopeTables& rope, int64_t rotary_dim) {
  const int64_t hd = x.size(-1);
  if (rotary_dim == hd) return apply_rope(x, rope);
  return at::cat({apply_rope(x.narrow(-1, 0, rotary_dim), rope), x.narrow(-1, rotary_dim, hd - rotary_dim)}, -1);
}

// rms_norm_one_plus of few values (tensor_ops.h's kSmallF32Values; issue 45): float32
// or BF16 rows whose last dim is contiguous (a q head narrowed from its gate too).
bool rms_norm_one_plus_small_applies(const at::Tensor& x, const at::Tensor& w) {
  return small_f32_enabled() && (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16) &&
         x.device().is_cpu() && (x.dim() == 2 || x.dim() == 3) && x.stride(-1) == 1 && x.size(-1) > 0 &&
         x.numel() <= kSmallF32Values && w.scalar_type() == at::kFloat && w.device().is_cpu() && w.dim() == 1 &&
         w.is_contiguous() && w.size(0) == x.size(-1);
}

template <typename T>
float widened(const T* p, int64_t i) {
  return static_cast<float>(p[i]);
}

// The op-by-op form's float32 operations in its order, each rounded: x * x into a
// contiguous tensor whose rows libtorch sums (its mean is that sum / d, a float
// division), + eps as a float, 1 / sqrt, x * that, times (1 + w), cast to x's dtype
// (round to nearest even, as .to(kBFloat16)). The result is contiguous, as the
// op-by-op form's is for any layout of x. Tested bit for bit: SmallFloat32Test.RmsNormOnePlus*.
template <typename T>
at::Tensor rms_norm_one_plus_rows(const at::Tensor& x, const at::Tensor& w, double eps) {
  const int64_t d = x.size(-1), rows = x.numel() / d;
  const int64_t inner = x.dim() == 3 ? x.size(1) : 1;
  const int64_t outer_stride = x.stride(0), inner_stride = x.dim() == 3 ? x.stride(1) : 0;
  const T* xp = x.data_ptr<T>();
  auto row_of = [&](int64_t r) { return xp + (r / inner) * outer_stride + (r % inner) * inner_stride; };
  at::Tensor squares = at::empty({rows, d}, x.options().dtype(at::kFloat));
  float* sq = squares.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = row_of(r);
    for (int64_t i = 0; i < d; ++i) {
      const float v = widened(xr, i);
      sq[r * d + i] = v * v;
    }
  }
  const at::Tensor sums = squares.sum(-1);
  const float* sum = sums.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  const float e = static_cast<float>(eps), n = static_cast<float>(d);
  at::Tensor out = at::empty(x.sizes(), x.options());
  T* op = out.data_ptr<T>();
  for (int64_t r = 0; r < rows; ++r) {
    const float inv = 1.0f / std::sqrt(sum[r] / n + e);
    const T* xr = row_of(r);
    for (int64_t i = 0; i < d; ++i) op[r * d + i] = static_cast<T>((widened(xr, i) * inv) * wp[i]);
  }
  return out;
}

at::Tensor rms_norm_one_plus_small(const at::Tensor& x, const at::Tensor& w, double eps) {
  return x.scalar_type() == at::kFloat ? rms_norm_one_plus_rows<float>(x, w, eps)
                                       : rms_norm_one_plus_rows<c10::BFloat16>(x, w, eps);
}

}  // namespace

at::Tensor rms_norm_one_plus(const at::Tensor& x, const at::Tensor& one_plus_w, double eps) {
  if (rms_norm_one_plus_small_applies(x, one_plus_w)) return rms_norm_one_plus_small(x, one_plus_w, eps);
  at::Tensor x32 = x.to(at::kFloat);
  return (x32 * at::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps) * one_plus_w).to(x.scalar_type());
}

namespace {

// A Gated DeltaNet layer's weights under `a` ("...linear_attn."), in the layouts
// gdn_forward reads: the conv as [kernel, channels], A as -exp(A_log).
GdnWeights take_gdn_weights(WeightLoader& loader, const std::string& a, const GdnDims& g) {
  const int64_t h = g.hidden, channels = g.conv_channels(), vd = g.value_heads * g.value_dim;
  GdnWeights w;
  w.in_qkv = loader.take_linear(a + "in_proj_qkv.weight", {channels, h});
  w.in_z = loader.take_linear(a + "in_proj_z.weight", {vd, h});
  w.in_b = loader.take_linear(a + "in_proj_b.weight", {g.value_heads, h});
  w.in_a = loader.take_linear(a + "in_proj_a.weight", {g.value_heads, h});
  at::Tensor conv = loader.take_float32(a + "conv1d.weight", {channels, 1, g.conv_kernel});
  if (conv.defined()) w.conv = conv.view({channels, g.conv_kernel}).t().contiguous();
  at::Tensor a_log = loader.take_float32(a + "A_log", {g.value_heads});
  if (a_log.defined()) w.neg_a = -at::exp(a_log);
  w.dt_bias = loader.take_float32(a + "dt_bias", {g.value_heads});
  w.norm = loader.take(a + "norm.weight", {g.value_dim});
  w.out = loader.take_linear(a + "out_proj.weight", {h, vd});
  return w;
}

}  // namespace

GdnDims gdn_dims_of(const Qwen35Config& config) {
  GdnDims g;
  g.hidden = config.text.hidden_size;
  g.key_heads = config.linear_num_key_heads;
  g.value_heads = config.linear_num_value_heads;
  g.key_dim = config.linear_key_head_dim;
  g.value_dim = config.linear_value_head_dim;
  g.conv_kernel = config.linear_conv_kernel_dim;
  g.eps = config.text.rms_norm_eps;
  return g;
}

Result<std::unique_ptr<Qwen35Target>> Qwen35Target::load(const std::string& folder, const ComputeOptions& options,
                                                         LoadReport* report) {
  auto model = open_model_folder(folder, load_qwen35_config);
  if (!model.ok()) return model.status();
  SafetensorsCheckpoint& ckpt = *model->checkpoint;
  const std::string prefix =
      ckpt.contains("model.language_model.embed_tokens.weight") ? "model.language_model." : "model.";
  const std::vector<std::string> skip = {"model.visual.", "visual.", "mtp.", "model.mtp."};

  std::unique_ptr<Qwen35Target> t(new Qwen35Target());
  t->config_ = std::move(model->config);
  t->options_ = options;
  const Qwen35Config& c = t->config_;
  const DecoderConfig& tc = c.text;
  const int64_t h = tc.hidden_size, v = tc.vocab_size, hd = tc.head_dim, in = tc.intermediate_size;
  const int64_t nh = tc.num_attention_heads, nkv = tc.num_key_value_heads;
  const GdnDims& g = t->gdn_dims_ = gdn_dims_of(c);
  WeightLoader loader(&ckpt, "target", options);
  auto one_plus = [&](const std::string& name, int64_t n) {
    at::Tensor w = loader.take_float32(name, {n});
    return w.defined() ? w + 1.0 : w;
  };
  t->embed_tokens_ = loader.take(prefix + "embed_tokens.weight", {v, h});
  t->norm_ = one_plus(prefix + "norm.weight", h);
  t->lm_head_ = loader.take_lm_head(t->embed_tokens_, tc.tie_word_embeddings, v, h);
  for (int64_t i = 0; i < tc.num_hidden_layers; ++i) {
    const std::string p = prefix + "layers." + std::to_string(i) + ".";
    Layer layer;
    layer.linear = c.linear_layer[static_cast<size_t>(i)];
    layer.input_norm = one_plus(p + "input_layernorm.weight", h);
    layer.post_norm = one_plus(p + "post_attention_layernorm.weight", h);
    layer.gate = loader.take_linear(p + "mlp.gate_proj.weight", {in, h});
    layer.up = loader.take_linear(p + "mlp.up_proj.weight", {in, h});
    layer.down = loader.take_linear(p + "mlp.down_proj.weight", {h, in});
    if (layer.linear) {
      layer.gdn = take_gdn_weights(loader, p + "linear_attn.", g);
    } else {
      const std::string a = p + "self_attn.";
      layer.q = loader.take_linear(a + "q_proj.weight", {nh * hd * 2, h});
      layer.k = loader.take_linear(a + "k_proj.weight", {nkv * hd, h});
      layer.v = loader.take_linear(a + "v_proj.weight", {nkv * hd, h});
      layer.o = loader.take_linear(a + "o_proj.weight", {h, nh * hd});
      layer.q_norm = one_plus(a + "q_norm.weight", hd);
      layer.k_norm = one_plus(a + "k_norm.weight", hd);
    }
    t->layers_.push_back(std::move(layer));
  }
  FERRY_RETURN_IF_ERROR(loader.finish(skip, report));
  t->caches_.resize(static_cast<size_t>(tc.num_hidden_layers));
  t->token_macs_ = t->lm_head_.numel();
  for (const Layer& l : t->layers_) {
    // The recurrence: about 4 state multiply-adds a value per key (decay, read, write, output).
    const int64_t recurrence = 4 * g.value_heads * g.key_dim * g.value_dim;
    for (const at::Tensor* w : {&l.gate, &l.up, &l.down, &l.q, &l.k, &l.v, &l.o, &l.gdn.in_qkv, &l.gdn.in_z,
                                &l.gdn.in_b, &l.gdn.in_a, &l.gdn.out}) {
      t->token_macs_ += w->defined() ? w->numel() : 0;
    }
    if (l.linear) t->token_macs_ += recurrence;
    if (!l.linear) ++t->attention_layers_;
  }
  t->reset();
  return t;
}

at::Tensor Qwen35Target::embed(const at::Tensor& ids) const { return embed_tokens_.index_select(0, ids); }

at::Tensor Qwen35Target::lm_head(const at::Tensor& hidden) const {
  return project_columns(hidden, lm_head_, config_.text.vocab_size).to(at::kFloat);
}

at::Tensor Qwen35Target::attention_layer(const Layer& layer, size_t index, const at::Tensor& x, int64_t past,
                                         const RopeTables& rope) {
  const DecoderConfig& c = config_.text;
  const int64_t t = x.size(0), nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  std::vector<at::Tensor> qkv = project_all(x, {layer.q, layer.k, layer.v});
  at::Tensor qg = qkv[0].view({t, nh, 2 * hd});
  at::Tensor q = rms_norm_one_plus(qg.narrow(2, 0, hd), layer.q_norm, c.rms_norm_eps);
  at::Tensor gate = qg.narrow(2, hd, hd).reshape({t, nh * hd});
  at::Tensor k = rms_norm_one_plus(qkv[1].view({t, nkv, hd}), layer.k_norm, c.rms_norm_eps);
  at::Tensor v = qkv[2].view({t, nkv, hd});
  q = partial_rope(q.transpose(0, 1), rope, config_.rotary_dim);  // [nh, T, hd]
  k = partial_rope(k.transpose(0, 1), rope, config_.rotary_dim);  // [nkv, T, hd]
  KvCache& cache = caches_[index];
  cache.append(k, v.transpose(0, 1));
  at::Tensor attn = attention(q, cache.keys(), cache.values(), past);  // [T, nh*hd]
  return project(attn * at::sigmoid(gate), layer.o);
}

Qwen35Target::Output Qwen35Target::forward(const at::Tensor& ids, const std::vector<int64_t>& capture,
                                           int64_t logits_rows) {
  const DecoderConfig& c = config_.text;
  const int64_t t = ids.size(0);
  const int64_t past = length_;
  c10::InferenceMode inference;
  ThreadsForWork threads(t * token_macs_ +
                         attention_layers_ * attention_macs(t, past + t, c.num_attention_heads, c.head_dim));
  RopeTables rope = rope_tables(past, t, config_.rotary_dim, c.rope_theta, options_);
  std::vector<at::Tensor> captured(capture.size());

  at::Tensor x = embed(ids.to(options_.device));  // [T, hidden]
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& layer = layers_[i];
    at::Tensor h = rms_norm_one_plus(x, layer.input_norm, c.rms_norm_eps);
    x = x +
        (layer.linear ? gdn_forward(gdn_dims_, layer.gdn, h, &states_[i]) : attention_layer(layer, i, h, past, rope));
    at::Tensor m = rms_norm_one_plus(x, layer.post_norm, c.rms_norm_eps);
    x = x + swiglu(m, layer.gate, layer.up, layer.down);
    for (size_t j = 0; j < capture.size(); ++j) {
      // hidden_states[N] in Hugging Face is the final-normed output, not the raw one.
      if (capture[j] == static_cast<int64_t>(i)) {
        captured[j] = i + 1 == layers_.size() ? rms_norm_one_plus(x, norm_, c.rms_norm_eps) : x;
      }
    }
  }
  last_forward_start_ = past;
  length_ = past + t;
  return forward_output(*this, x, logits_rows, captured,
                        [&](const at::Tensor& h) { return rms_norm_one_plus(h, norm_, c.rms_norm_eps); });
}

void Qwen35Target::crop(int64_t length) {
  if (length >= length_) return;
  if (length <= 0) {
    reset();
    return;
  }
  c10::InferenceMode inference;
  TORCH_CHECK(length >= last_forward_start_, "qwen3_5 target: cannot roll back to ", length,
              " positions; the recurrent state is kept from position ", last_forward_start_);
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (layers_[i].linear) {
      gdn_rollback(&states_[i], length - last_forward_start_);
    } else {
      caches_[i].crop(length);
    }
  }
  length_ = length;
}

void Qwen35Target::reset() {
  c10::InferenceMode inference;
  states_.assign(layers_.size(), GdnState());
  for (size_t i = 0; i < layers_.size(); ++i) {
    caches_[i].reset();
    if (layers_[i].linear) states_[i] = gdn_initial_state(gdn_dims_, options_.device);
  }
  length_ = 0;
  last_forward_start_ = 0;
}

Status Qwen35Target::check_prompt(const std::vector<int64_t>& prompt) const {
  for (size_t i = 0; i < prompt.size(); ++i) {
    const auto& ids = config_.vision_token_ids;
    if (std::find(ids.begin(), ids.end(), prompt[i]) != ids.end()) {
      return invalid_argument("prompt token " + std::to_string(i) + " is " + std::to_string(prompt[i]) +
                              ", an image/video placeholder: vision inputs are not supported (text only)");
    }
  }
  return Status();
}

}  // namespace ferry::eval
