#include "jobs/eval/models/decoder_layer.h"

namespace ferry::eval {

DecoderLayer load_decoder_layer(WeightLoader& loader, const std::string& p, const DecoderLayerShape& s) {
  const int64_t h = s.hidden, hd = s.head_dim, qd = s.heads * hd, kvd = s.kv_heads * hd, in = s.intermediate;
  DecoderLayer layer;
  layer.input_norm = loader.take(p + "input_layernorm.weight", {h});
  layer.q = loader.take_linear(p + "self_attn.q_proj.weight", {qd, h});
  layer.k = loader.take_linear(p + "self_attn.k_proj.weight", {kvd, h});
  layer.v = loader.take_linear(p + "self_attn.v_proj.weight", {kvd, h});
  layer.o = loader.take_linear(p + "self_attn.o_proj.weight", {h, qd});
  layer.q_norm = loader.take(p + "self_attn.q_norm.weight", {hd});
  layer.k_norm = loader.take(p + "self_attn.k_norm.weight", {hd});
  layer.post_norm = loader.take(p + "post_attention_layernorm.weight", {h});
  layer.gate = loader.take_linear(p + "mlp.gate_proj.weight", {in, h});
  layer.up = loader.take_linear(p + "mlp.up_proj.weight", {in, h});
  layer.down = loader.take_linear(p + "mlp.down_proj.weight", {h, in});
  return layer;
}

int64_t projection_macs(const DecoderLayer& l) {
  int64_t macs = 0;
  for (const at::Tensor* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) macs += w->numel();
  return macs;
}

}  // namespace ferry::eval
