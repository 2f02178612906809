#include "jobs/eval/models/qwen3_target.h"

#include <algorithm>

#include "jobs/eval/cpu/compute_threads.h"

namespace ferry::eval {

Result<std::unique_ptr<Qwen3Target>> Qwen3Target::load(const std::string& folder, const ComputeOptions& options,
                                                       LoadReport* report) {
  auto model = open_model_folder(folder, load_qwen3_config);
  if (!model.ok()) return model.status();
  SafetensorsCheckpoint& ckpt = *model->checkpoint;

  // Name scheme: a VLM wrapper nests the text model under model.language_model.
  std::string prefix = "model.";
  std::vector<std::string> skip = {"mtp.", "model.mtp."};
  if (ckpt.contains("model.language_model.embed_tokens.weight")) {
    prefix = "model.language_model.";
    skip.push_back("model.visual.");
    skip.push_back("visual.");
  } else if (model->config.vlm_wrapped) {
    skip.push_back("model.visual.");
    skip.push_back("visual.");
  }

  std::unique_ptr<Qwen3Target> t(new Qwen3Target());
  t->config_ = std::move(model->config);
  t->options_ = options;
  const DecoderConfig& c = t->config_;
  const int64_t h = c.hidden_size, v = c.vocab_size, hd = c.head_dim;
  const int64_t in = c.intermediate_size;

  WeightLoader loader(&ckpt, "target", options);
  t->embed_tokens_ = loader.take(prefix + "embed_tokens.weight", {v, h});
  t->norm_ = loader.take(prefix + "norm.weight", {h});
  t->lm_head_ = loader.take_lm_head(t->embed_tokens_, c.tie_word_embeddings, v, h);
  const DecoderLayerShape shape{h, c.num_attention_heads, c.num_key_value_heads, hd, in};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = prefix + "layers." + std::to_string(i) + ".";
    t->layers_.push_back(load_decoder_layer(loader, p, shape));
  }
  FERRY_RETURN_IF_ERROR(loader.finish(skip, report));
  t->caches_.resize(c.num_hidden_layers);
  t->rope_ = std::make_unique<RopeCache>(hd, c.rope_theta, options);
  t->token_macs_ = t->lm_head_.numel();
  for (const Layer& layer : t->layers_) t->token_macs_ += projection_macs(layer);
  return t;
}

std::string Qwen3Target::describe() const {
  return "qwen3: " + std::to_string(config_.num_hidden_layers) + " full attention";
}

at::Tensor Qwen3Target::embed(const at::Tensor& ids) const { return embed_tokens_.index_select(0, ids); }

at::Tensor Qwen3Target::lm_head(const at::Tensor& hidden) const {
  return project_columns(hidden, lm_head_, config_.vocab_size);
}

void Qwen3Target::reserve(int64_t positions) {
  c10::InferenceMode inference;
  const DecoderConfig& c = config_;
  auto kv = at::TensorOptions().dtype(options_.dtype).device(options_.device);
  for (KvCache& cache : caches_) cache.reserve(c.num_key_value_heads, positions, c.head_dim, kv);
  rope_->reserve(positions);
}

Qwen3Target::Output Qwen3Target::forward(const at::Tensor& ids, const std::vector<int64_t>& capture,
                                         int64_t logits_rows) {
  const DecoderConfig& c = config_;
  const int64_t t = ids.size(0);
  const int64_t past = cache_length();
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  c10::InferenceMode inference;
  ThreadsForWork threads(t * token_macs_ + c.num_hidden_layers * attention_macs(t, past + t, nh, hd));
  RopeTables rope = rope_->at(past, t);
  // Keys are the cache after this forward's append: past + t of them.
  at::Tensor mask = causal_mask(t, past + t, past, options_.device);
  std::vector<at::Tensor> captured(capture.size());

  at::Tensor x = embed(ids.to(options_.device));  // [T, hidden]
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const Layer& layer = layers_[i];
    at::Tensor h = rms_norm(x, layer.input_norm, c.rms_norm_eps);
    std::vector<at::Tensor> qkv = project_all(h, {layer.q, layer.k, layer.v});
    at::Tensor q = qkv[0].view({t, nh, hd});
    at::Tensor k = qkv[1].view({t, nkv, hd});
    at::Tensor v = qkv[2].view({t, nkv, hd});
    q = norm_rope_heads(q, layer.q_norm, c.rms_norm_eps, rope);  // [nh, T, hd]
    k = norm_rope_heads(k, layer.k_norm, c.rms_norm_eps, rope);  // [nkv, T, hd]
    caches_[i].append(k, v.transpose(0, 1));
    at::Tensor attn = attention_with_mask(q, caches_[i].keys(), caches_[i].values(), mask);  // [T, nh*hd]
    x = residual_add(x, project(attn, layer.o));
    x = residual_add(x, swiglu(rms_norm(x, layer.post_norm, c.rms_norm_eps), layer.gate, layer.up, layer.down));
    for (size_t j = 0; j < capture.size(); ++j) {
      // hidden_states[N] in Hugging Face is the final-normed output, not the raw one.
      if (capture[j] == i) captured[j] = i == c.num_hidden_layers - 1 ? rms_norm(x, norm_, c.rms_norm_eps) : x;
    }
  }
  return forward_output(*this, x, logits_rows, captured,
                        [&](const at::Tensor& h) { return rms_norm(h, norm_, c.rms_norm_eps); });
}

void Qwen3Target::crop(int64_t length) {
  for (KvCache& cache : caches_) cache.crop(length);
}

void Qwen3Target::reset() {
  for (KvCache& cache : caches_) cache.reset();
}

}  // namespace ferry::eval
