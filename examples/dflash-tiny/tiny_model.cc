#include "examples/dflash-tiny/tiny_model.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "examples/dflash-tiny/corpus.h"
#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/io/safetensors_writer.h"

namespace ferry::dflash_tiny {
namespace {

using nlohmann::json;

at::Tensor rms(const at::Tensor& x, const at::Tensor& w, double eps) {
  return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * w;
}

struct Rope {
  at::Tensor cos, sin;  // [max_positions, head_dim], float32
};

Rope rope_table(const Dims& d) {
  at::Tensor inv = at::pow(d.theta, at::arange(0, d.head_dim, 2, at::kDouble) / static_cast<double>(d.head_dim))
                       .reciprocal();
  at::Tensor freqs = at::outer(at::arange(d.max_positions, at::kDouble), inv);
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  return {emb.cos().to(at::kFloat), emb.sin().to(at::kFloat)};
}

// x: [..., head_dim]; cos/sin broadcastable to x. Non-interleaved halves (rotate_half).
at::Tensor rotate(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos + rotated * sin;
}

// q: [batch, heads, Tq, hd]; k, v: [batch, kv_heads, Tk, hd]; mask additive, broadcastable
// to [batch, heads, Tq, Tk]. Query head h uses kv head h / rep. -> [batch, Tq, heads*hd]
at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& mask) {
  const int64_t rep = q.size(1) / k.size(1);
  at::Tensor kk = rep == 1 ? k : k.repeat_interleave(rep, 1);
  at::Tensor vv = rep == 1 ? v : v.repeat_interleave(rep, 1);
  at::Tensor scores = at::matmul(q, kk.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  at::Tensor probs = at::softmax(scores + mask, -1);
  at::Tensor out = at::matmul(probs, vv);  // [batch, heads, Tq, hd]
  return out.transpose(1, 2).reshape({q.size(0), q.size(2), q.size(1) * q.size(3)});
}

at::Tensor mlp(const Layer& l, const at::Tensor& h) {
  return at::linear(at::silu(at::linear(h, l.gate)) * at::linear(h, l.up), l.down);
}

at::Tensor param(at::Tensor t) { return t.set_requires_grad(true); }

Layer init_layer(const Dims& d, int64_t total_layers) {
  const double std = 0.02, out_std = 0.02 / std::sqrt(2.0 * static_cast<double>(total_layers));
  auto lin = [](int64_t out, int64_t in, double s) { return param(at::randn({out, in}) * s); };
  auto ones = [](int64_t n) { return param(at::ones({n})); };
  Layer l;
  l.input_norm = ones(d.hidden);
  l.q = lin(d.heads * d.head_dim, d.hidden, std);
  l.k = lin(d.kv_heads * d.head_dim, d.hidden, std);
  l.v = lin(d.kv_heads * d.head_dim, d.hidden, std);
  l.o = lin(d.hidden, d.heads * d.head_dim, out_std);
  l.q_norm = ones(d.head_dim);
  l.k_norm = ones(d.head_dim);
  l.post_norm = ones(d.hidden);
  l.gate = lin(d.intermediate, d.hidden, std);
  l.up = lin(d.intermediate, d.hidden, std);
  l.down = lin(d.hidden, d.intermediate, out_std);
  return l;
}

void name_layer(const std::string& prefix, const Layer& l, Named* out) {
  out->emplace_back(prefix + "input_layernorm.weight", l.input_norm);
  out->emplace_back(prefix + "self_attn.q_proj.weight", l.q);
  out->emplace_back(prefix + "self_attn.k_proj.weight", l.k);
  out->emplace_back(prefix + "self_attn.v_proj.weight", l.v);
  out->emplace_back(prefix + "self_attn.o_proj.weight", l.o);
  out->emplace_back(prefix + "self_attn.q_norm.weight", l.q_norm);
  out->emplace_back(prefix + "self_attn.k_norm.weight", l.k_norm);
  out->emplace_back(prefix + "post_attention_layernorm.weight", l.post_norm);
  out->emplace_back(prefix + "mlp.gate_proj.weight", l.gate);
  out->emplace_back(prefix + "mlp.up_proj.weight", l.up);
  out->emplace_back(prefix + "mlp.down_proj.weight", l.down);
}

json dims_json(const Dims& d) {
  return json{{"model_type", "qwen3"},
              {"hidden_size", d.hidden},
              {"intermediate_size", d.intermediate},
              {"num_hidden_layers", d.layers},
              {"num_attention_heads", d.heads},
              {"num_key_value_heads", d.kv_heads},
              {"head_dim", d.head_dim},
              {"rms_norm_eps", d.eps},
              {"rope_theta", d.theta},
              {"vocab_size", d.vocab},
              {"max_position_embeddings", d.max_positions},
              {"hidden_act", "silu"},
              {"attention_bias", false},
              {"torch_dtype", "float32"}};
}

// Writes into folder/.tmp, then renames weights and config into folder and removes .tmp.
Status save(const std::string& folder, const Named& named, const json& config) {
  ::mkdir(folder.c_str(), 0755);
  const std::string tmp = folder + "/.tmp";
  std::vector<eval::WriteTensor> tensors;
  tensors.reserve(named.size());
  for (const auto& [name, t] : named) {
    at::Tensor c = t.detach().to(at::kFloat).contiguous();
    eval::WriteTensor w;
    w.name = name;
    w.shape = c.sizes().vec();
    w.values.assign(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
    tensors.push_back(std::move(w));
  }
  eval::WriteOptions options;
  Status st = eval::write_safetensors_checkpoint(tmp, tensors, options);
  if (!st.ok()) return st;
  {
    std::ofstream out(tmp + "/config.json", std::ios::trunc);
    out << config.dump(2) << "\n";
    if (!out) return errno_status(tmp + "/config.json: write failed", errno);
  }
  for (const char* file : {"model.safetensors", "config.json"}) {
    const std::string from = tmp + "/" + file, to = folder + "/" + file;
    if (std::rename(from.c_str(), to.c_str()) != 0) return errno_status("rename " + from + " -> " + to, errno);
  }
  ::rmdir(tmp.c_str());  // empty now; a checkpoint folder holds only the checkpoint
  return Status();
}

}  // namespace

Named Target::named() const {
  Named out;
  out.emplace_back("model.embed_tokens.weight", embed);
  for (size_t i = 0; i < layers.size(); ++i) name_layer("model.layers." + std::to_string(i) + ".", layers[i], &out);
  out.emplace_back("model.norm.weight", norm);
  out.emplace_back("lm_head.weight", lm_head);
  return out;
}

Named Drafter::named() const {
  Named out;
  out.emplace_back("fc.weight", fc);
  out.emplace_back("hidden_norm.weight", hidden_norm);
  for (size_t i = 0; i < layers.size(); ++i) name_layer("layers." + std::to_string(i) + ".", layers[i], &out);
  out.emplace_back("norm.weight", norm);
  return out;
}

std::vector<at::Tensor> parameters(const Named& named) {
  std::vector<at::Tensor> out;
  for (const auto& n : named) out.push_back(n.second);
  return out;
}

Target init_target(const Dims& dims, uint64_t seed) {
  at::manual_seed(seed);
  Target t;
  t.dims = dims;
  t.embed = param(at::randn({dims.vocab, dims.hidden}) * 0.02);
  for (int64_t i = 0; i < dims.layers; ++i) t.layers.push_back(init_layer(dims, dims.layers));
  t.norm = param(at::ones({dims.hidden}));
  t.lm_head = param(at::randn({dims.vocab, dims.hidden}) * 0.02);
  return t;
}

Drafter init_drafter(const Dims& dims, int64_t fc_inputs, uint64_t seed) {
  at::manual_seed(seed);
  Drafter d;
  d.dims = dims;
  d.fc = param(at::randn({dims.hidden, fc_inputs}) * (1.0 / std::sqrt(static_cast<double>(fc_inputs))));
  d.hidden_norm = param(at::ones({dims.hidden}));
  for (int64_t i = 0; i < dims.layers; ++i) d.layers.push_back(init_layer(dims, dims.layers));
  d.norm = param(at::ones({dims.hidden}));
  return d;
}

Result<Target> load_target(const std::string& folder) {
  const std::string path = folder + "/config.json";
  std::ifstream in(path);
  if (!in) return errno_status(path + ": cannot open", errno);
  std::stringstream buf;
  buf << in.rdbuf();
  json j = json::parse(buf.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument(path + ": invalid JSON");
  Dims d;
  try {
    d.vocab = j.at("vocab_size").get<int64_t>();
    d.hidden = j.at("hidden_size").get<int64_t>();
    d.intermediate = j.at("intermediate_size").get<int64_t>();
    d.layers = j.at("num_hidden_layers").get<int64_t>();
    d.heads = j.at("num_attention_heads").get<int64_t>();
    d.kv_heads = j.at("num_key_value_heads").get<int64_t>();
    d.head_dim = j.at("head_dim").get<int64_t>();
    d.eps = j.at("rms_norm_eps").get<double>();
    d.theta = j.at("rope_theta").get<double>();
    d.max_positions = j.value("max_position_embeddings", d.max_positions);
  } catch (const json::exception& e) {
    return invalid_argument(path + ": " + e.what());
  }
  if (j.value("tie_word_embeddings", false))
    return invalid_argument(path + ": tied heads are not written by this example");
  Target t = init_target(d, 0);
  if (j.contains("eos_token_id") && j["eos_token_id"].is_number_integer()) t.eos_id = j["eos_token_id"].get<int64_t>();
  auto ckpt = eval::SafetensorsCheckpoint::open(folder);
  if (!ckpt.ok()) return ckpt.status();
  at::NoGradGuard no_grad;
  std::string problems;
  for (auto& [name, tensor] : t.named()) {
    if (!(*ckpt)->contains(name)) { problems += " missing " + name + ";"; continue; }
    auto rec = (*ckpt)->read(name);
    if (!rec.ok()) return rec.status();
    if (rec->info.dtype != eval::StDtype::kF32 || rec->info.shape != tensor.sizes().vec()) {
      problems += " " + name + " is not F32 of the config's shape;";
      continue;
    }
    tensor.copy_(at::from_blob(const_cast<uint8_t*>(rec->data), tensor.sizes(), at::kFloat));
    tensor.set_requires_grad(false);
  }
  for (const auto& name : (*ckpt)->names()) {
    if (!(*ckpt)->read_names().count(name)) problems += " unused " + name + ";";
  }
  if (!problems.empty()) return invalid_argument(folder + ":" + problems);
  return t;
}

at::Tensor target_forward(const Target& target, const at::Tensor& tokens, const std::vector<int64_t>& capture,
                          std::vector<at::Tensor>* captured) {
  const Dims& d = target.dims;
  const int64_t batch = tokens.size(0), t = tokens.size(1);
  static thread_local Rope rope;
  if (!rope.cos.defined() || rope.cos.size(0) < t || rope.cos.size(1) != d.head_dim) rope = rope_table(d);
  at::Tensor cos = rope.cos.narrow(0, 0, t), sin = rope.sin.narrow(0, 0, t);  // [T, hd]
  at::Tensor mask = at::full({t, t}, -std::numeric_limits<float>::infinity()).triu(1);
  at::Tensor x = at::embedding(target.embed, tokens);  // [batch, T, hidden]
  std::vector<at::Tensor> outputs;
  for (const Layer& l : target.layers) {
    at::Tensor h = rms(x, l.input_norm, d.eps);
    at::Tensor q = rms(at::linear(h, l.q).view({batch, t, d.heads, d.head_dim}), l.q_norm, d.eps).transpose(1, 2);
    at::Tensor k = rms(at::linear(h, l.k).view({batch, t, d.kv_heads, d.head_dim}), l.k_norm, d.eps).transpose(1, 2);
    at::Tensor v = at::linear(h, l.v).view({batch, t, d.kv_heads, d.head_dim}).transpose(1, 2);
    x = x + at::linear(attend(rotate(q, cos, sin), rotate(k, cos, sin), v, mask), l.o);
    x = x + mlp(l, rms(x, l.post_norm, d.eps));
    outputs.push_back(x);  // raw layer output: HF hidden_states[layer + 1]
  }
  if (captured) {
    for (int64_t id : capture) captured->push_back(outputs.at(static_cast<size_t>(id)));
  }
  return at::linear(rms(x, target.norm, d.eps), target.lm_head);  // [batch, T, vocab]
}

at::Tensor drafter_loss(const Drafter& drafter, const Target& target, const at::Tensor& tokens,
                        const at::Tensor& features, const at::Tensor& anchors, double gamma, DrafterBatchStats* stats) {
  const Dims& d = drafter.dims;
  const int64_t batch = tokens.size(0), s = tokens.size(1), a = anchors.size(1), b = drafter.block_size;
  const int64_t ab = a * b;
  static thread_local Rope rope;
  if (!rope.cos.defined() || rope.cos.size(0) < s + b || rope.cos.size(1) != d.head_dim) {
    Dims rd = d;
    rd.max_positions = std::max<int64_t>(d.max_positions, s + b);
    rope = rope_table(rd);
  }
  // Context: [batch, S, hidden], projected once.
  at::Tensor ctx = rms(at::linear(features, drafter.fc), drafter.hidden_norm, d.eps);
  // Blocks: [batch, A, B] ids = [tokens[p], MASK x (B-1)] at positions p..p+B-1.
  at::Tensor offsets = at::arange(b, at::kLong);
  at::Tensor pos = anchors.unsqueeze(-1) + offsets;  // [batch, A, B]
  at::Tensor ids =
      at::cat({tokens.gather(1, anchors).unsqueeze(-1), at::full({batch, a, b - 1}, drafter.mask_id, at::kLong)}, -1);
  at::Tensor x = at::embedding(target.embed, ids.view({batch, ab}));  // [batch, AB, hidden]
  at::Tensor cos_blk = rope.cos.index_select(0, pos.view(-1)).view({batch, 1, ab, d.head_dim});
  at::Tensor sin_blk = rope.sin.index_select(0, pos.view(-1)).view({batch, 1, ab, d.head_dim});
  at::Tensor cos_ctx = rope.cos.narrow(0, 0, s), sin_ctx = rope.sin.narrow(0, 0, s);
  // Mask: a block's queries see context keys < its anchor and every key of their own block.
  at::Tensor ctx_ok = (at::arange(s, at::kLong).view({1, 1, s}) < anchors.unsqueeze(-1))  // [batch, A, S]
                          .unsqueeze(2).expand({batch, a, b, s}).reshape({batch, ab, s});
  at::Tensor block_of = at::arange(ab, at::kLong).div(b, "floor");
  at::Tensor blk_ok = (block_of.unsqueeze(1) == block_of.unsqueeze(0)).unsqueeze(0).expand({batch, ab, ab});
  at::Tensor ok = at::cat({ctx_ok, blk_ok}, -1);  // [batch, AB, S + AB]
  at::Tensor mask = at::zeros(ok.sizes()).masked_fill(ok.logical_not(), -std::numeric_limits<float>::infinity())
                        .unsqueeze(1);  // [batch, 1, AB, S + AB]
  for (const Layer& l : drafter.layers) {
    at::Tensor h = rms(x, l.input_norm, d.eps);
    at::Tensor q = rms(at::linear(h, l.q).view({batch, ab, d.heads, d.head_dim}), l.q_norm, d.eps).transpose(1, 2);
    at::Tensor kc = rms(at::linear(ctx, l.k).view({batch, s, d.kv_heads, d.head_dim}), l.k_norm, d.eps).transpose(1, 2);
    at::Tensor kb = rms(at::linear(h, l.k).view({batch, ab, d.kv_heads, d.head_dim}), l.k_norm, d.eps).transpose(1, 2);
    at::Tensor vc = at::linear(ctx, l.v).view({batch, s, d.kv_heads, d.head_dim}).transpose(1, 2);
    at::Tensor vb = at::linear(h, l.v).view({batch, ab, d.kv_heads, d.head_dim}).transpose(1, 2);
    at::Tensor k = at::cat({rotate(kc, cos_ctx, sin_ctx), rotate(kb, cos_blk, sin_blk)}, 2);
    at::Tensor v = at::cat({vc, vb}, 2);
    x = x + at::linear(attend(rotate(q, cos_blk, sin_blk), k, v, mask), l.o);
    x = x + mlp(l, rms(x, l.post_norm, d.eps));
  }
  // Slots 1..B-1 -> drafter norm -> target lm_head; slot k predicts tokens[p + k].
  at::Tensor out = rms(x, drafter.norm, d.eps).view({batch, a, b, d.hidden}).narrow(2, 1, b - 1);
  at::Tensor logits = at::linear(out, target.lm_head);  // [batch, A, B-1, vocab]
  at::Tensor label_pos = pos.narrow(2, 1, b - 1);
  at::Tensor valid = (label_pos < s).to(at::kFloat);
  at::Tensor labels = tokens.gather(1, label_pos.clamp_max(s - 1).reshape({batch, -1})).view(label_pos.sizes());
  at::Tensor decay = at::exp(-at::arange(b - 1, at::kFloat) / gamma);  // k = 1..B-1 -> exp(-(k-1)/gamma)
  at::Tensor w = valid * decay;
  at::Tensor ce = -at::log_softmax(logits, -1).gather(-1, labels.unsqueeze(-1)).squeeze(-1);
  at::Tensor loss = (ce * w).sum() / w.sum();
  if (stats) {
    at::NoGradGuard no_grad;
    at::Tensor hit = (logits.argmax(-1) == labels).to(at::kFloat) * valid;
    stats->loss = loss.item<double>();
    stats->slot1_accuracy = (hit.select(2, 0).sum() / valid.select(2, 0).sum()).item<double>();
    stats->all_accuracy = (hit.sum() / valid.sum()).item<double>();
  }
  return loss;
}

double AdamW::step(double lr, double max_norm) {
  constexpr double kBeta1 = 0.9, kBeta2 = 0.95, kEps = 1e-8;
  at::NoGradGuard no_grad;
  if (m_.empty()) {
    for (const auto& p : params_) {
      m_.push_back(at::zeros_like(p));
      v_.push_back(at::zeros_like(p));
    }
  }
  double sq = 0;
  for (const auto& p : params_) {
    if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
  }
  const double norm = std::sqrt(sq);
  const double coef = norm > max_norm ? max_norm / (norm + 1e-6) : 1.0;
  ++t_;
  const double bc1 = 1 - std::pow(kBeta1, static_cast<double>(t_));
  const double bc2 = 1 - std::pow(kBeta2, static_cast<double>(t_));
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor p = params_[i];
    if (!p.grad().defined()) continue;
    at::Tensor g = p.grad() * coef;
    m_[i].mul_(kBeta1).add_(g, 1 - kBeta1);
    v_[i].mul_(kBeta2).addcmul_(g, g, 1 - kBeta2);
    if (p.dim() >= 2 && wd_ > 0) p.mul_(1 - lr * wd_);
    p.addcdiv_(m_[i], (v_[i] / bc2).sqrt_().add_(kEps), -lr / bc1);
    p.mutable_grad().zero_();
  }
  return norm;
}

Status save_target(const std::string& folder, const Target& target) {
  json c = dims_json(target.dims);
  c["architectures"] = {"Qwen3ForCausalLM"};
  c["tie_word_embeddings"] = false;
  c["eos_token_id"] = target.eos_id;
  c["bos_token_id"] = nullptr;
  return save(folder, target.named(), c);
}

Status save_drafter(const std::string& folder, const Drafter& drafter) {
  json c = dims_json(drafter.dims);
  c["architectures"] = {"DFlashDraftModel"};
  c["block_size"] = drafter.block_size;
  c["num_target_layers"] = drafter.num_target_layers;
  c["tie_word_embeddings"] = false;
  c["dflash_config"] = {{"mask_token_id", drafter.mask_id}, {"target_layer_ids", drafter.target_layer_ids}};
  c["layer_types"] = std::vector<std::string>(static_cast<size_t>(drafter.dims.layers), "full_attention");
  return save(folder, drafter.named(), c);
}

Result<TokenStream> load_stream(const std::string& path) {
  auto raw = read_tokens(path);
  if (!raw.ok()) return raw.status();
  TokenStream s;
  s.tokens.assign(raw->begin(), raw->end());
  s.doc_starts.push_back(0);
  for (size_t i = 0; i + 1 < s.tokens.size(); ++i) {
    if (s.tokens[i] == kEosId) s.doc_starts.push_back(static_cast<int64_t>(i + 1));
  }
  return s;
}

at::Tensor sample_windows(const TokenStream& stream, int64_t batch, int64_t len, uint64_t* rng_state) {
  auto next = [rng_state]() {  // splitmix64: deterministic, independent of libtorch's generator
    uint64_t z = (*rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const int64_t n = static_cast<int64_t>(stream.tokens.size());
  at::Tensor out = at::empty({batch, len}, at::kLong);
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t r = 0; r < batch; ++r) {
    int64_t start = stream.doc_starts[next() % stream.doc_starts.size()];
    if (next() % 2) start += static_cast<int64_t>(next() % 64);
    start = std::min(start, n - len);
    std::copy(stream.tokens.begin() + start, stream.tokens.begin() + start + len, o + r * len);
  }
  return out;
}

std::vector<int64_t> default_target_layer_ids(int64_t num_target_layers, int64_t num_draft_layers) {
  if (num_draft_layers == 1) return {num_target_layers / 2};
  const int64_t start = 1, end = num_target_layers - 3, span = end - start;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < num_draft_layers; ++i) {
    ids.push_back(static_cast<int64_t>(std::nearbyint(
        static_cast<double>(start) + static_cast<double>(i * span) / static_cast<double>(num_draft_layers - 1))));
  }
  return ids;
}

std::vector<int64_t> parse_ids(const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0) return {};
    ids.push_back(v);
  }
  return ids;
}

double lr_at(int64_t step, int64_t total, double peak, double warmup_fraction) {
  const int64_t warm = std::max<int64_t>(1, static_cast<int64_t>(warmup_fraction * static_cast<double>(total)));
  if (step < warm) return peak * static_cast<double>(step + 1) / static_cast<double>(warm);
  const double progress = static_cast<double>(step - warm) / static_cast<double>(std::max<int64_t>(1, total - warm));
  return peak * (0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * std::min(1.0, progress))));
}

}  // namespace ferry::dflash_tiny
