#include "jobs/eval/tools/tiny_models.h"

#include <cerrno>
#include <cmath>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/io/safetensors_writer.h"

namespace ferry::eval {
namespace {

// Uniform values from mt19937_64 bits only, so every platform makes the same model.
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  /// Uniform in [-a, a], rounded to a BF16-exact value.
  float uniform(double a) {
    double u = static_cast<double>(gen_() >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
    return bf16_exact(static_cast<float>((2.0 * u - 1.0) * a));
  }
  uint64_t next() { return gen_(); }
  static float bf16_exact(float x) { return bf16_to_float(float_to_bf16(x)); }

 private:
  std::mt19937_64 gen_;
};

WriteTensor tensor(const std::string& name, std::vector<int64_t> shape) {
  WriteTensor t;
  t.name = name;
  t.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  t.values.assign(static_cast<size_t>(n), 0.0f);
  return t;
}

WriteTensor random_tensor(Rng& rng, const std::string& name, std::vector<int64_t> shape, double a) {
  WriteTensor t = tensor(name, std::move(shape));
  for (float& v : t.values) v = rng.uniform(a);
  return t;
}

WriteTensor norm_tensor(Rng& rng, const std::string& name, int64_t n, double jitter) {
  WriteTensor t = tensor(name, {n});
  for (float& v : t.values) v = Rng::bf16_exact(1.0f + rng.uniform(jitter));
  return t;
}

// Uniform bound giving a standard deviation of gain / sqrt(fan_in).
double bound(int64_t fan_in, double gain) { return gain * std::sqrt(3.0 / static_cast<double>(fan_in)); }

// Zeroes the output rows [0, rows) of a [out, in] weight: the layer then never writes
// into the vocab dims of the residual stream (oracle construction).
void zero_rows(WriteTensor* t, int64_t rows) {
  const int64_t in = t->shape[1];
  for (int64_t r = 0; r < rows && r < t->shape[0]; ++r) {
    for (int64_t c = 0; c < in; ++c) t->values[static_cast<size_t>(r * in + c)] = 0.0f;
  }
}

// One Qwen3-style decoder layer's tensors under `p`; `protect` > 0 zeroes the output
// rows of o_proj and down_proj below it.
void add_layer(std::vector<WriteTensor>* out, Rng& rng, const std::string& p, int64_t h, int64_t inter, int64_t nh,
               int64_t nkv, int64_t hd, int64_t protect) {
  out->push_back(norm_tensor(rng, p + "input_layernorm.weight", h, 0.1));
  out->push_back(random_tensor(rng, p + "self_attn.q_proj.weight", {nh * hd, h}, bound(h, 1.0)));
  out->push_back(random_tensor(rng, p + "self_attn.k_proj.weight", {nkv * hd, h}, bound(h, 1.0)));
  out->push_back(random_tensor(rng, p + "self_attn.v_proj.weight", {nkv * hd, h}, bound(h, 1.0)));
  WriteTensor o = random_tensor(rng, p + "self_attn.o_proj.weight", {h, nh * hd}, bound(nh * hd, 0.5));
  if (protect > 0) zero_rows(&o, protect);
  out->push_back(std::move(o));
  out->push_back(norm_tensor(rng, p + "self_attn.q_norm.weight", hd, 0.1));
  out->push_back(norm_tensor(rng, p + "self_attn.k_norm.weight", hd, 0.1));
  out->push_back(norm_tensor(rng, p + "post_attention_layernorm.weight", h, 0.1));
  out->push_back(random_tensor(rng, p + "mlp.gate_proj.weight", {inter, h}, bound(h, 1.0)));
  out->push_back(random_tensor(rng, p + "mlp.up_proj.weight", {inter, h}, bound(h, 1.0)));
  WriteTensor down = random_tensor(rng, p + "mlp.down_proj.weight", {h, inter}, bound(inter, 0.5));
  if (protect > 0) zero_rows(&down, protect);
  out->push_back(std::move(down));
}

nlohmann::json qwen3_fields(int64_t vocab, int64_t h, int64_t inter, int64_t layers, int64_t nh, int64_t nkv,
                            int64_t hd, double theta) {
  return {{"vocab_size", vocab},
          {"hidden_size", h},
          {"intermediate_size", inter},
          {"num_hidden_layers", layers},
          {"num_attention_heads", nh},
          {"num_key_value_heads", nkv},
          {"head_dim", hd},
          {"rms_norm_eps", 1e-6},
          {"rope_theta", theta},
          {"max_position_embeddings", 40960},
          {"hidden_act", "silu"},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"torch_dtype", "float32"}};
}

// splitmix64: a stateless hash, so element i of a streamed tensor needs no stream position.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// random_tensor, or with s.streamed its lazily generated twin (own seed from rng).
WriteTensor spec_random(Rng& rng, const TinyTargetSpec& s, const std::string& name, std::vector<int64_t> shape,
                        double a) {
  if (!s.streamed) return random_tensor(rng, name, std::move(shape), a);
  WriteTensor t;
  t.name = name;
  t.shape = std::move(shape);
  const uint64_t seed = rng.next();
  t.fill = [seed, a](int64_t begin, int64_t count, float* out) {
    for (int64_t i = 0; i < count; ++i) {
      double u =
          static_cast<double>(mix(seed ^ mix(static_cast<uint64_t>(begin + i))) >> 11) * (1.0 / 9007199254740992.0);
      out[i] = Rng::bf16_exact(static_cast<float>((2.0 * u - 1.0) * a));
    }
  };
  return t;
}

// A zero-centred (1+w) norm weight: w near 0.
WriteTensor centred_norm_tensor(Rng& rng, const std::string& name, int64_t n, double jitter) {
  WriteTensor t = tensor(name, {n});
  for (float& v : t.values) v = rng.uniform(jitter);
  return t;
}

// One Qwen3.5 decoder layer under `p`: Gated DeltaNet or gated attention, then the MLP;
// `protect` as in add_layer.
void add_qwen35_layer(std::vector<WriteTensor>* out, Rng& rng, const std::string& p, const TinyTargetSpec& s,
                      bool linear, int64_t protect) {
  const int64_t h = s.hidden;
  out->push_back(centred_norm_tensor(rng, p + "input_layernorm.weight", h, 0.1));
  if (linear) {
    const std::string a = p + "linear_attn.";
    const int64_t kd = s.linear_key_heads * s.linear_key_dim, vd = s.linear_value_heads * s.linear_value_dim;
    out->push_back(spec_random(rng, s, a + "in_proj_qkv.weight", {2 * kd + vd, h}, bound(h, 1.0)));
    out->push_back(spec_random(rng, s, a + "in_proj_z.weight", {vd, h}, bound(h, 1.0)));
    out->push_back(spec_random(rng, s, a + "in_proj_b.weight", {s.linear_value_heads, h}, bound(h, 1.0)));
    out->push_back(spec_random(rng, s, a + "in_proj_a.weight", {s.linear_value_heads, h}, bound(h, 1.0)));
    out->push_back(
        spec_random(rng, s, a + "conv1d.weight", {2 * kd + vd, 1, s.conv_kernel}, bound(s.conv_kernel, 1.0)));
    // A_log near -2: per-step decay 0.75..0.97, so the state carries over many tokens.
    WriteTensor a_log = tensor(a + "A_log", {s.linear_value_heads});
    for (float& v : a_log.values) v = Rng::bf16_exact(-2.0f + rng.uniform(1.0));
    out->push_back(std::move(a_log));
    out->push_back(spec_random(rng, s, a + "dt_bias", {s.linear_value_heads}, 0.5));
    out->push_back(norm_tensor(rng, a + "norm.weight", s.linear_value_dim, 0.1));
    WriteTensor o = spec_random(rng, s, a + "out_proj.weight", {h, vd}, bound(vd, 0.5));
    if (protect > 0) zero_rows(&o, protect);
    out->push_back(std::move(o));
  } else {
    const std::string a = p + "self_attn.";
    const int64_t nh = s.heads, nkv = s.kv_heads, hd = s.head_dim;
    out->push_back(spec_random(rng, s, a + "q_proj.weight", {nh * hd * 2, h}, bound(h, 1.0)));
    out->push_back(spec_random(rng, s, a + "k_proj.weight", {nkv * hd, h}, bound(h, 1.0)));
    out->push_back(spec_random(rng, s, a + "v_proj.weight", {nkv * hd, h}, bound(h, 1.0)));
    WriteTensor o = spec_random(rng, s, a + "o_proj.weight", {h, nh * hd}, bound(nh * hd, 0.5));
    if (protect > 0) zero_rows(&o, protect);
    out->push_back(std::move(o));
    out->push_back(centred_norm_tensor(rng, a + "q_norm.weight", hd, 0.1));
    out->push_back(centred_norm_tensor(rng, a + "k_norm.weight", hd, 0.1));
  }
  out->push_back(centred_norm_tensor(rng, p + "post_attention_layernorm.weight", h, 0.1));
  out->push_back(spec_random(rng, s, p + "mlp.gate_proj.weight", {s.intermediate, h}, bound(h, 1.0)));
  out->push_back(spec_random(rng, s, p + "mlp.up_proj.weight", {s.intermediate, h}, bound(h, 1.0)));
  WriteTensor down = spec_random(rng, s, p + "mlp.down_proj.weight", {h, s.intermediate}, bound(s.intermediate, 0.5));
  if (protect > 0) zero_rows(&down, protect);
  out->push_back(std::move(down));
}

std::vector<std::string> qwen35_layer_types(const TinyTargetSpec& s) {
  if (!s.layer_types.empty()) return s.layer_types;
  std::vector<std::string> types;
  for (int64_t i = 0; i < s.layers; ++i) types.push_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
  return types;
}

Status write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return errno_status(path + ": cannot create", errno);
  out << j.dump(2) << "\n";
  return out ? Status() : errno_status(path + ": write failed", errno);
}

// config.json of a target around its text config `text`: the text config itself, for
// `causal_lm`, or under a VLM wrapper (`vlm`, `vlm_type`) beside a tiny vision config.
nlohmann::json target_config(nlohmann::json text, const TinyTargetSpec& s, const TinyWriteSpec& w,
                             const char* causal_lm, const char* vlm, const char* vlm_type) {
  text["tie_word_embeddings"] = s.tie_embeddings;
  if (s.eos_token_id >= 0) text["eos_token_id"] = s.eos_token_id;
  if (!w.vlm_wrapped) {
    text["architectures"] = {causal_lm};
    return text;
  }
  return {{"architectures", {vlm}},
          {"model_type", vlm_type},
          {"text_config", text},
          {"vision_config", {{"depth", 1}, {"hidden_size", 32}, {"patch_size", 4}}},
          {"tie_word_embeddings", s.tie_embeddings}};
}

// config.json of a Qwen3.5 target: `text` holds the dimensions shared with Qwen3.
nlohmann::json qwen35_config(nlohmann::json text, const TinyTargetSpec& s, const TinyWriteSpec& w,
                             const std::vector<std::string>& types) {
  text.erase("rope_theta");
  text["model_type"] = "qwen3_5_text";
  text["layer_types"] = types;
  text["full_attention_interval"] = 4;
  text["attn_output_gate"] = true;
  text["linear_num_key_heads"] = s.linear_key_heads;
  text["linear_num_value_heads"] = s.linear_value_heads;
  text["linear_key_head_dim"] = s.linear_key_dim;
  text["linear_value_head_dim"] = s.linear_value_dim;
  text["linear_conv_kernel_dim"] = s.conv_kernel;
  text["rope_parameters"] = {{"rope_type", "default"},
                             {"rope_theta", s.rope_theta},
                             {"partial_rotary_factor", s.partial_rotary_factor},
                             {"mrope_section", {1, 1, 0}},
                             {"mrope_interleaved", true}};
  text["mamba_ssm_dtype"] = "float32";
  text["mtp_num_hidden_layers"] = 1;
  nlohmann::json config = target_config(text, s, w, "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "qwen3_5");
  if (w.vlm_wrapped) {
    // Vision placeholder ids sit just past the tiny vocabulary, so random prompts never hold them.
    config["image_token_id"] = s.vocab;
    config["video_token_id"] = s.vocab + 1;
    config["vision_start_token_id"] = s.vocab + 2;
  }
  config["ferry_tiny_model"] = {{"kind", s.kind}, {"seed", s.seed}, {"arch", s.arch}};
  return config;
}

}  // namespace

int64_t oracle_next(const TinyTargetSpec& s, int64_t t) {
  if (t == s.oracle_fixed_token || t == s.oracle_mask_token || s.oracle_period <= 1 || t % s.oracle_period == 0) {
    return s.oracle_fixed_token;
  }
  return (7 * t + 3) % s.vocab;
}

void set_qwen36_27b_widths(TinyTargetSpec* s) {
  s->arch = "qwen3_5";
  s->hidden = 5120;
  s->intermediate = 17408;
  s->heads = 24;
  s->kv_heads = 4;
  s->head_dim = 256;
  s->rope_theta = 1e7;
  s->linear_key_heads = 16;
  s->linear_value_heads = 48;
  s->linear_key_dim = 128;
  s->linear_value_dim = 128;
  s->conv_kernel = 4;
}

TinyTargetSpec small_oracle_target_spec(int64_t period) {
  TinyTargetSpec s;
  s.kind = "oracle";
  s.vocab = 64;
  s.hidden = 96;
  s.heads = 6;
  s.oracle_period = period;
  s.oracle_mask_token = 63;
  return s;
}

TinyDrafterSpec drafter_spec_for(const TinyTargetSpec& target) {
  TinyDrafterSpec d;
  const int64_t own_layers = d.layers;
  static_cast<TinyLayerDims&>(d) = target;
  d.layers = own_layers;
  d.target_vocab = target.vocab;
  d.num_target_layers = target.layers;
  return d;
}

namespace {

// What a tiny target spec must hold before anything is written: its kind and arch,
// head counts that divide, a hybrid's layer types (returned; empty for qwen3).
Result<std::vector<std::string>> checked_layer_types(const TinyTargetSpec& s) {
  const bool oracle = s.kind == "oracle";
  if (!oracle && s.kind != "random") return invalid_argument("tiny target kind must be random or oracle");
  if (oracle && s.vocab >= s.hidden) return invalid_argument("oracle target needs vocab < hidden");
  if (s.heads % s.kv_heads != 0) return invalid_argument("heads must be a multiple of kv_heads");
  const bool hybrid = s.arch == "qwen3_5";
  if (!hybrid && s.arch != "qwen3") return invalid_argument("tiny target arch must be qwen3 or qwen3_5");
  const std::vector<std::string> types = hybrid ? qwen35_layer_types(s) : std::vector<std::string>();
  if (hybrid) {
    if (static_cast<int64_t>(types.size()) != s.layers) return invalid_argument("layer types must name every layer");
    for (const auto& t : types) {
      if (t != "linear_attention" && t != "full_attention") {
        return invalid_argument("layer type '" + t + "' is not linear_attention or full_attention");
      }
    }
    if (s.linear_value_heads % s.linear_key_heads != 0) {
      return invalid_argument("linear value heads must be a multiple of linear key heads");
    }
  }
  if (s.streamed && (oracle || !hybrid)) return invalid_argument("streamed tiny targets are random qwen3_5 only");
  return types;
}

}  // namespace

Status write_tiny_target(const std::string& folder, const TinyTargetSpec& s, const TinyWriteSpec& w) {
  auto checked = checked_layer_types(s);
  if (!checked.ok()) return checked.status();
  const std::vector<std::string>& types = *checked;
  const bool oracle = s.kind == "oracle", hybrid = s.arch == "qwen3_5";
  Rng rng(s.seed);
  const int64_t h = s.hidden, v = s.vocab;
  const std::string base = w.vlm_wrapped ? "model.language_model." : "model.";
  std::vector<WriteTensor> ts;
  WriteTensor embed = oracle ? tensor(base + "embed_tokens.weight", {v, h})
                             : spec_random(rng, s, base + "embed_tokens.weight", {v, h}, bound(1, 1.0));
  if (oracle) {
    for (int64_t t = 0; t < v; ++t) {
      embed.values[static_cast<size_t>(t * h + t)] = 1.0f;  // one-hot in the vocab dims
      for (int64_t d = v; d < h; ++d) embed.values[static_cast<size_t>(t * h + d)] = rng.uniform(0.5);
    }
  }
  ts.push_back(std::move(embed));
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = base + "layers." + std::to_string(i) + ".";
    if (hybrid) {
      add_qwen35_layer(&ts, rng, p, s, types[static_cast<size_t>(i)] == "linear_attention", oracle ? v : 0);
    } else {
      add_layer(&ts, rng, p, h, s.intermediate, s.heads, s.kv_heads, s.head_dim, oracle ? v : 0);
    }
  }
  if (oracle) {
    WriteTensor norm = tensor(base + "norm.weight", {h});
    for (float& x : norm.values) x = hybrid ? 0.0f : 1.0f;  // scale 1 either way ((1+w) vs w)
    ts.push_back(std::move(norm));
  } else if (hybrid) {
    ts.push_back(centred_norm_tensor(rng, base + "norm.weight", h, 0.1));
  } else {
    ts.push_back(norm_tensor(rng, base + "norm.weight", h, 0.1));
  }
  if (!s.tie_embeddings) {
    WriteTensor head =
        oracle ? tensor("lm_head.weight", {v, h}) : spec_random(rng, s, "lm_head.weight", {v, h}, bound(h, 4.0));
    if (oracle) {
      for (int64_t t = 0; t < v; ++t) head.values[static_cast<size_t>(oracle_next(s, t) * h + t)] = 1.0f;
    }
    ts.push_back(std::move(head));
  } else if (oracle) {
    return invalid_argument("oracle target cannot tie embeddings");
  }
  if (w.vlm_wrapped) {
    // Vision tower and MTP head that a text-only loader must leave unread.
    ts.push_back(random_tensor(rng, "model.visual.patch_embed.proj.weight", {32, 3, 2, 4, 4}, 0.1));
    ts.push_back(random_tensor(rng, "model.visual.blocks.0.attn.qkv.weight", {96, 32}, 0.1));
    ts.push_back(random_tensor(rng, "model.visual.merger.mlp.0.weight", {h, 128}, 0.1));
    ts.push_back(random_tensor(rng, "mtp.fc.weight", {h, 2 * h}, 0.1));
    ts.push_back(norm_tensor(rng, "mtp.norm.weight", h, 0.1));
  }

  WriteOptions options;
  options.dtype = w.dtype;
  options.shards = w.shards;
  FERRY_RETURN_IF_ERROR(write_safetensors_checkpoint(folder, ts, options));

  nlohmann::json text = qwen3_fields(v, h, s.intermediate, s.layers, s.heads, s.kv_heads, s.head_dim, s.rope_theta);
  if (hybrid) return write_json(folder + "/config.json", qwen35_config(text, s, w, types));
  text["model_type"] = "qwen3";
  nlohmann::json config = target_config(text, s, w, "Qwen3ForCausalLM", "Qwen3VLForConditionalGeneration", "qwen3_vl");
  config["ferry_tiny_model"] = {{"kind", s.kind}, {"seed", s.seed}};
  return write_json(folder + "/config.json", config);
}

Status write_tiny_drafter(const std::string& folder, const TinyDrafterSpec& s, const TinyWriteSpec& w) {
  const bool constructed = s.kind == "agree" || s.kind == "disagree";
  if (!constructed && s.kind != "random")
    return invalid_argument("tiny drafter kind must be random, agree or disagree");
  if (s.heads % s.kv_heads != 0) return invalid_argument("heads must be a multiple of kv_heads");
  if (!s.layer_types.empty() && static_cast<int64_t>(s.layer_types.size()) != s.layers) {
    return invalid_argument("drafter layer types must name every layer");
  }
  Rng rng(s.seed);
  const int64_t h = s.hidden;
  const int64_t nfeat = s.target_layer_ids.empty() ? s.layers : static_cast<int64_t>(s.target_layer_ids.size());
  const int64_t protect = constructed ? s.target_vocab : 0;
  std::vector<WriteTensor> ts;
  WriteTensor fc = random_tensor(rng, "fc.weight", {h, nfeat * h}, bound(nfeat * h, 1.0));
  ts.push_back(std::move(fc));
  ts.push_back(norm_tensor(rng, "hidden_norm.weight", h, 0.1));
  for (int64_t i = 0; i < s.layers; ++i) {
    add_layer(&ts, rng, "layers." + std::to_string(i) + ".", h, s.intermediate, s.heads, s.kv_heads, s.head_dim,
              protect);
  }
  WriteTensor norm = norm_tensor(rng, "norm.weight", h, 0.1);
  if (constructed) {
    // agree: the vocab dims pass through unscaled, so lm_head sees the mask's one-hot.
    // disagree: negated, so the fixed token gets the only negative logit.
    for (int64_t d = 0; d < s.target_vocab && d < h; ++d) {
      norm.values[static_cast<size_t>(d)] = s.kind == "agree" ? 1.0f : -1.0f;
    }
  }
  ts.push_back(std::move(norm));

  WriteOptions options;
  options.dtype = w.dtype;
  options.shards = w.shards;
  FERRY_RETURN_IF_ERROR(write_safetensors_checkpoint(folder, ts, options));

  nlohmann::json config =
      qwen3_fields(s.target_vocab, h, s.intermediate, s.layers, s.heads, s.kv_heads, s.head_dim, s.rope_theta);
  config["architectures"] = {"DFlashDraftModel"};
  config["model_type"] = "qwen3";
  config["block_size"] = s.block_size;
  config["num_target_layers"] = s.num_target_layers;
  config["tie_word_embeddings"] = false;
  config["dflash_config"] = {{"mask_token_id", s.mask_token_id}};
  if (!s.target_layer_ids.empty()) config["dflash_config"]["target_layer_ids"] = s.target_layer_ids;
  if (!s.layer_types.empty()) {
    // Qwen3.6-27B-DFlash style: explicit per-layer kinds and one window.
    config["layer_types"] = s.layer_types;
    config["use_sliding_window"] = s.sliding_window > 0;
    config["sliding_window"] = s.sliding_window > 0 ? nlohmann::json(s.sliding_window) : nlohmann::json();
    config["max_window_layers"] = s.layers;
  }
  config["ferry_tiny_model"] = {{"kind", s.kind}, {"seed", s.seed}};
  return write_json(folder + "/config.json", config);
}

Status write_tiny_prompts(const std::string& path, int count, int64_t vocab, int min_len, int max_len, uint64_t seed) {
  if (count < 1 || min_len < 1 || max_len < min_len || vocab < 1) return invalid_argument("bad prompt parameters");
  std::mt19937_64 gen(seed);
  std::ofstream out(path, std::ios::trunc);
  if (!out) return errno_status(path + ": cannot create", errno);
  for (int i = 0; i < count; ++i) {
    int len = min_len + static_cast<int>(gen() % static_cast<uint64_t>(max_len - min_len + 1));
    nlohmann::json ids = nlohmann::json::array();
    for (int k = 0; k < len; ++k) ids.push_back(static_cast<int64_t>(gen() % static_cast<uint64_t>(vocab)));
    out << nlohmann::json{{"input_ids", ids}}.dump() << "\n";
  }
  return out ? Status() : errno_status(path + ": write failed", errno);
}

}  // namespace ferry::eval
