#include "jobs/eval/tools/tiny_models.h"

#include <cerrno>
#include <cmath>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "jobs/eval/safetensors_reader.h"
#include "jobs/eval/safetensors_writer.h"

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

Status write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return errno_status(path + ": cannot create", errno);
  out << j.dump(2) << "\n";
  return out ? Status() : errno_status(path + ": write failed", errno);
}

}  // namespace

int64_t oracle_next(const TinyTargetSpec& s, int64_t t) {
  if (t == s.oracle_fixed_token || t == s.oracle_mask_token || s.oracle_period <= 1 || t % s.oracle_period == 0) {
    return s.oracle_fixed_token;
  }
  return (7 * t + 3) % s.vocab;
}

Status write_tiny_target(const std::string& folder, const TinyTargetSpec& s, const TinyWriteSpec& w) {
  const bool oracle = s.kind == "oracle";
  if (!oracle && s.kind != "random") return invalid_argument("tiny target kind must be random or oracle");
  if (oracle && s.vocab >= s.hidden) return invalid_argument("oracle target needs vocab < hidden");
  if (s.heads % s.kv_heads != 0) return invalid_argument("heads must be a multiple of kv_heads");
  Rng rng(s.seed);
  const int64_t h = s.hidden, v = s.vocab;
  const std::string base = w.vlm_wrapped ? "model.language_model." : "model.";
  std::vector<WriteTensor> ts;

  WriteTensor embed = oracle ? tensor(base + "embed_tokens.weight", {v, h})
                             : random_tensor(rng, base + "embed_tokens.weight", {v, h}, bound(1, 1.0));
  if (oracle) {
    for (int64_t t = 0; t < v; ++t) {
      embed.values[static_cast<size_t>(t * h + t)] = 1.0f;  // one-hot in the vocab dims
      for (int64_t d = v; d < h; ++d) embed.values[static_cast<size_t>(t * h + d)] = rng.uniform(0.5);
    }
  }
  ts.push_back(std::move(embed));
  for (int64_t i = 0; i < s.layers; ++i) {
    add_layer(&ts, rng, base + "layers." + std::to_string(i) + ".", h, s.intermediate, s.heads, s.kv_heads,
              s.head_dim, oracle ? v : 0);
  }
  if (oracle) {
    WriteTensor norm = tensor(base + "norm.weight", {h});
    for (float& x : norm.values) x = 1.0f;
    ts.push_back(std::move(norm));
  } else {
    ts.push_back(norm_tensor(rng, base + "norm.weight", h, 0.1));
  }
  if (!s.tie_embeddings) {
    WriteTensor head = oracle ? tensor("lm_head.weight", {v, h})
                              : random_tensor(rng, "lm_head.weight", {v, h}, bound(h, 4.0));
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
  text["model_type"] = "qwen3";
  text["tie_word_embeddings"] = s.tie_embeddings;
  if (s.eos_token_id >= 0) text["eos_token_id"] = s.eos_token_id;
  nlohmann::json config;
  if (w.vlm_wrapped) {
    config = {{"architectures", {"Qwen3VLForConditionalGeneration"}},
              {"model_type", "qwen3_vl"},
              {"text_config", text},
              {"vision_config", {{"depth", 1}, {"hidden_size", 32}, {"patch_size", 4}}},
              {"tie_word_embeddings", s.tie_embeddings}};
  } else {
    config = text;
    config["architectures"] = {"Qwen3ForCausalLM"};
  }
  config["ferry_tiny_model"] = {{"kind", s.kind}, {"seed", s.seed}};
  return write_json(folder + "/config.json", config);
}

Status write_tiny_drafter(const std::string& folder, const TinyDrafterSpec& s, const TinyWriteSpec& w) {
  const bool constructed = s.kind == "agree" || s.kind == "disagree";
  if (!constructed && s.kind != "random") return invalid_argument("tiny drafter kind must be random, agree or disagree");
  if (s.heads % s.kv_heads != 0) return invalid_argument("heads must be a multiple of kv_heads");
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

  nlohmann::json config = qwen3_fields(s.target_vocab, h, s.intermediate, s.layers, s.heads, s.kv_heads, s.head_dim,
                                       s.rope_theta);
  config["architectures"] = {"DFlashDraftModel"};
  config["model_type"] = "qwen3";
  config["block_size"] = s.block_size;
  config["num_target_layers"] = s.num_target_layers;
  config["tie_word_embeddings"] = false;
  config["dflash_config"] = {{"mask_token_id", s.mask_token_id}};
  if (!s.target_layer_ids.empty()) config["dflash_config"]["target_layer_ids"] = s.target_layer_ids;
  config["ferry_tiny_model"] = {{"kind", s.kind}, {"seed", s.seed}};
  return write_json(folder + "/config.json", config);
}

Status write_tiny_prompts(const std::string& path, int count, int64_t vocab, int min_len, int max_len,
                          uint64_t seed) {
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
