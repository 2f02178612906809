#include "jobs/eval/models/dflash_drafter.h"

#include <limits>

#include "jobs/eval/cpu/compute_threads.h"

namespace ferry::eval {

namespace {

// Checked before any weight is read, so a drafter made for another target is named
// as such, not as a shape error of the first tensor (fc.weight) that shows it.
Status check_hidden_size_fits(const DFlashConfig& drafter, int64_t target_hidden_size) {
  if (drafter.model.hidden_size == target_hidden_size) return Status();
  return invalid_argument(drafter.model.path + ": drafter hidden_size " + std::to_string(drafter.model.hidden_size) +
                          " differs from the target's " + std::to_string(target_hidden_size) +
                          " (the drafter uses the target's embedding and lm_head, and its fc.weight reads the "
                          "target's hidden states): was it made for another target?");
}

}  // namespace

Result<std::unique_ptr<DFlashDrafter>> DFlashDrafter::load(const std::string& folder, int64_t target_hidden_size,
                                                           const ComputeOptions& options, LoadReport* report,
                                                           const std::string& what) {
  auto model = open_model_folder(folder, load_dflash_config);
  if (!model.ok()) return model.status();
  SafetensorsCheckpoint& ckpt = *model->checkpoint;
  // z-lab writes unprefixed names; some converters keep the `model.` prefix.
  const std::string prefix = !ckpt.contains("fc.weight") && ckpt.contains("model.fc.weight") ? "model." : "";

  FERRY_RETURN_IF_ERROR(check_hidden_size_fits(model->config, target_hidden_size));
  std::unique_ptr<DFlashDrafter> d(new DFlashDrafter());
  d->config_ = std::move(model->config);
  d->options_ = options;
  const DecoderConfig& c = d->config_.model;
  const int64_t h = c.hidden_size, hd = c.head_dim;
  const int64_t in = c.intermediate_size;
  const int64_t features = static_cast<int64_t>(d->config_.target_layer_ids.size()) * target_hidden_size;

  WeightLoader loader(&ckpt, what, options);
  d->fc_ = loader.take_linear(prefix + "fc.weight", {h, features});
  d->hidden_norm_ = loader.take(prefix + "hidden_norm.weight", {h});
  d->norm_ = loader.take(prefix + "norm.weight", {h});
  const DecoderLayerShape shape{h, c.num_attention_heads, c.num_key_value_heads, hd, in};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = prefix + "layers." + std::to_string(i) + ".";
    d->layers_.push_back(load_decoder_layer(loader, p, shape));
  }
  FERRY_RETURN_IF_ERROR(loader.finish({}, report));
  d->caches_.resize(c.num_hidden_layers);
  d->rope_ = std::make_unique<RopeCache>(hd, c.rope_theta, options);
  d->token_macs_ = d->fc_.numel();
  for (const Layer& layer : d->layers_) d->token_macs_ += projection_macs(layer);
  return d;
}

at::Tensor DFlashDrafter::forward(const at::Tensor& context, const at::Tensor& block) {
  const DecoderConfig& c = config_.model;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int64_t ctx_len = context.defined() ? context.size(0) : 0;
  const int64_t ctx_start = cache_length();
  const int64_t b = block.size(0);
  const int64_t block_start = ctx_start + ctx_len;
  c10::InferenceMode inference;

  at::Tensor ctx;  // [C, hidden]
  RopeTables ctx_rope;
  if (ctx_len > 0) {
    ctx = rms_norm(project(context.to(options_.device, options_.dtype), fc_), hidden_norm_, c.rms_norm_eps);
    ctx_rope = rope_->at(ctx_start, ctx_len);
  }
  RopeTables block_rope = rope_->at(block_start, b);

  // Sliding layers: query i at block_start+i sees key position p when
  // block_start+i - p < window (context) and p <= block_start+i (block: causal).
  at::Tensor sliding_mask;
  if (config_.sliding_window > 0) {
    auto longs = at::TensorOptions().dtype(at::kLong).device(options_.device);
    at::Tensor qpos = at::arange(block_start, block_start + b, longs).unsqueeze(1);  // [B, 1]
    at::Tensor kpos = at::arange(0, block_start + b, longs).unsqueeze(0);            // [1, S]
    at::Tensor visible = (kpos <= qpos).logical_and(qpos - kpos < config_.sliding_window);
    sliding_mask = at::zeros(visible.sizes(), longs.dtype(at::kFloat))
                       .masked_fill(visible.logical_not(), -std::numeric_limits<float>::infinity());
  }

  at::Tensor x = block.to(options_.device, options_.dtype);  // [B, hidden]
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& layer = layers_[i];
    if (ctx_len > 0) {
      // Context K/V depend only on the projected features and their positions, so
      // they are computed once per position and kept.
      std::vector<at::Tensor> kv = project_all(ctx, {layer.k, layer.v});
      at::Tensor kc = norm_rope_heads(kv[0].view({ctx_len, nkv, hd}), layer.k_norm, c.rms_norm_eps, ctx_rope);
      at::Tensor vc = kv[1].view({ctx_len, nkv, hd});
      caches_[i].append(kc, vc.transpose(0, 1));
    }
    at::Tensor h = rms_norm(x, layer.input_norm, c.rms_norm_eps);
    std::vector<at::Tensor> qkv = project_all(h, {layer.q, layer.k, layer.v});
    at::Tensor q = norm_rope_heads(qkv[0].view({b, nh, hd}), layer.q_norm, c.rms_norm_eps, block_rope);  // [nh, B, hd]
    at::Tensor kb =
        norm_rope_heads(qkv[1].view({b, nkv, hd}), layer.k_norm, c.rms_norm_eps, block_rope);  // [nkv, B, hd]
    at::Tensor vb = qkv[2].view({b, nkv, hd});
    // The block's K/V go after the context's in the cache for this call only (cropped
    // below): attention then reads one buffer instead of a fresh concatenation.
    caches_[i].append(kb, vb.transpose(0, 1));  // keys: [nkv, ctx_total + B, hd]
    const bool sliding = i < config_.sliding_layer.size() && config_.sliding_layer[i];
    at::Tensor attn = attention_with_mask(q, caches_[i].keys(), caches_[i].values(),
                                          sliding ? sliding_mask : at::Tensor());  // [B, nh*hd]
    caches_[i].crop(block_start);
    x = residual_add(x, project(attn, layer.o));
    x = residual_add(x, swiglu(rms_norm(x, layer.post_norm, c.rms_norm_eps), layer.gate, layer.up, layer.down));
  }
  return rms_norm(x, norm_, c.rms_norm_eps);
}

void DFlashDrafter::reserve(int64_t positions) {
  c10::InferenceMode inference;
  const DecoderConfig& c = config_.model;
  auto kv = at::TensorOptions().dtype(options_.dtype).device(options_.device);
  for (KvCache& cache : caches_) cache.reserve(c.num_key_value_heads, positions, c.head_dim, kv);
  rope_->reserve(positions);
}

void DFlashDrafter::crop(int64_t length) {
  for (KvCache& cache : caches_) cache.crop(length);
}

void DFlashDrafter::reset() {
  for (KvCache& cache : caches_) cache.reset();
}

// ---------------------------------------------------------------------------

Result<std::unique_ptr<DFlashProposer>> DFlashProposer::create(TargetModel* target, DFlashDrafter* drafter) {
  const DecoderConfig& tc = target->config();
  const DFlashConfig& dc = drafter->config();
  const std::string where = dc.model.path + ": ";
  FERRY_RETURN_IF_ERROR(check_hidden_size_fits(dc, tc.hidden_size));
  for (int64_t id : dc.target_layer_ids) {
    if (id < 0 || id >= tc.num_hidden_layers) {
      return invalid_argument(where + "target_layer_ids holds " + std::to_string(id) + " but the target has " +
                              std::to_string(tc.num_hidden_layers) + " layers");
    }
  }
  if (dc.mask_token_id < 0 || dc.mask_token_id >= tc.vocab_size) {
    return invalid_argument(where + "mask_token_id " + std::to_string(dc.mask_token_id) +
                            " is outside the target's vocabulary (" + std::to_string(tc.vocab_size) + ")");
  }
  return std::unique_ptr<DFlashProposer>(new DFlashProposer(target, drafter));
}

void DFlashProposer::reset() { drafter_->reset(); }

void DFlashProposer::reserve(int64_t positions) { drafter_->reserve(positions); }

Result<std::vector<int64_t>> DFlashProposer::propose(const DraftRequest& request) {
  const int64_t b = request.block_size;
  const int64_t ctx_len = request.context.defined() ? request.context.size(0) : 0;
  if (drafter_->cache_length() + ctx_len != request.start) {
    return internal_error("drafter context covers " + std::to_string(drafter_->cache_length() + ctx_len) +
                          " positions, block starts at " + std::to_string(request.start));
  }
  // The drafter's forward and the target's head over the block (the context rows are
  // few after the first step).
  const DecoderConfig& dc = drafter_->config().model;
  const DecoderConfig& tc = target_->config();
  c10::InferenceMode inference;
  ThreadsForWork threads((b + ctx_len) * drafter_->token_macs() + (b - 1) * tc.vocab_size * tc.hidden_size +
                         dc.num_hidden_layers * attention_macs(b, request.start + b, dc.num_attention_heads,
                                                               dc.head_dim));
  std::vector<int64_t> ids(static_cast<size_t>(b), drafter_->config().mask_token_id);
  ids[0] = (*request.tokens)[static_cast<size_t>(request.start)];
  at::Tensor block_ids = at::tensor(ids, at::kLong).to(target_->options().device);
  at::Tensor hidden = drafter_->forward(request.context, target_->embed(block_ids));  // [B, hidden]
  at::Tensor logits = target_->lm_head(hidden.narrow(0, 1, b - 1));                   // [B-1, vocab]
  at::Tensor draft = logits.argmax(-1).to(at::kCPU);                                  // only the ids leave the device
  const int64_t* p = draft.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + (b - 1));
}

}  // namespace ferry::eval
