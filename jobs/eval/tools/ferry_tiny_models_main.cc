// ferry-tiny-models: writes deterministic random tiny Qwen3 targets, DFlash drafters and
// prompt files for tests and examples. See jobs/eval/README.md for the flags.
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "jobs/eval/tools/tiny_models.h"

namespace {

constexpr const char* kUsage =
    "usage: ferry-tiny-models target  --out DIR [--arch qwen3|qwen3_5] [--kind random|oracle] [--seed N]\n"
    "                                 [--vocab N] [--hidden N] [--intermediate N] [--layers N] [--heads N]\n"
    "                                 [--kv-heads N] [--head-dim N] [--tie] [--eos N] [--oracle-token N]\n"
    "                                 [--oracle-period N] [--oracle-mask N] [--dtype F32|BF16|F16] [--shards N] "
    "[--vlm]\n"
    "                                 qwen3_5: [--layer-types linear,linear,linear,full] [--linear-key-heads N]\n"
    "                                 [--linear-value-heads N] [--linear-key-dim N] [--linear-value-dim N]\n"
    "                                 [--conv-kernel N] [--rope-theta X] [--stream]\n"
    "                                 (--stream: values generated while written, for 27B-sized slices)\n"
    "       ferry-tiny-models drafter --out DIR [--kind random|agree|disagree] [--seed N] [--target-vocab N]\n"
    "                                 [--hidden N] [--intermediate N] [--layers N] [--heads N] [--kv-heads N]\n"
    "                                 [--head-dim N] [--block-size B] [--mask N] [--num-target-layers N]\n"
    "                                 [--target-layer-ids 1,2,3] [--dtype F32|BF16|F16] [--shards N]\n"
    "                                 [--layer-types sliding,full] [--sliding-window N]\n"
    "       ferry-tiny-models prompts --out FILE [--count N] [--vocab N] [--min-len N] [--max-len N] [--seed N]\n"
    "       ferry-tiny-models suite   --out DIR   (a ready set: random and oracle targets, Qwen3 and\n"
    "                                           Qwen3.5 hybrid, drafters incl. a sliding-window one, prompts)\n";

int usage_error(const std::string& what) {
  std::cerr << "ferry-tiny-models: " << what << "\n" << kUsage;
  return 2;
}

bool to_int(const std::string& s, int64_t* out) {
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') return false;
  *out = v;
  return true;
}

// "linear,full,sliding" -> the config's layer_types names.
bool parse_layer_types(const std::string& list, std::vector<std::string>* out) {
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item == "linear" || item == "linear_attention") {
      out->push_back("linear_attention");
    } else if (item == "full" || item == "full_attention") {
      out->push_back("full_attention");
    } else if (item == "sliding" || item == "sliding_attention") {
      out->push_back("sliding_attention");
    } else {
      return false;
    }
  }
  return !out->empty();
}

// The command's flags: `--flag value`, and the switches that take none.
struct Flags {
  std::map<std::string, std::string> values;
  bool numbers_ok = true;  // false once a numeric flag was not an integer

  bool has(const char* flag) const { return values.count(flag) != 0; }
  std::string text(const char* flag, const char* def) const { return has(flag) ? values.at(flag) : def; }
  int64_t num(const char* flag, int64_t def) {
    auto it = values.find(flag);
    if (it == values.end()) return def;
    int64_t v = 0;
    if (!to_int(it->second, &v)) numbers_ok = false;
    return v;
  }
  void read_dims(ferry::eval::TinyLayerDims* d) {
    d->hidden = num("--hidden", d->hidden);
    d->intermediate = num("--intermediate", d->intermediate);
    d->layers = num("--layers", d->layers);
    d->heads = num("--heads", d->heads);
    d->kv_heads = num("--kv-heads", d->kv_heads);
    d->head_dim = num("--head-dim", d->head_dim);
  }
};

// What a command wrote: 0, or 1 with the reason on stderr.
int finished(const ferry::Status& status) {
  if (status.ok()) return 0;
  std::cerr << "ferry-tiny-models: " << status.message() << "\n";
  return 1;
}

int target_command(Flags& f, const std::string& out, const ferry::eval::TinyWriteSpec& write) {
  ferry::eval::TinyTargetSpec s;
  s.kind = f.text("--kind", "random");
  s.arch = f.text("--arch", "qwen3");
  s.seed = static_cast<uint64_t>(f.num("--seed", 1));
  s.linear_key_heads = f.num("--linear-key-heads", s.linear_key_heads);
  s.linear_value_heads = f.num("--linear-value-heads", s.linear_value_heads);
  s.linear_key_dim = f.num("--linear-key-dim", s.linear_key_dim);
  s.linear_value_dim = f.num("--linear-value-dim", s.linear_value_dim);
  s.conv_kernel = f.num("--conv-kernel", s.conv_kernel);
  s.streamed = f.has("--stream");
  if (f.has("--rope-theta")) s.rope_theta = std::strtod(f.values["--rope-theta"].c_str(), nullptr);
  if (f.has("--layer-types") && !parse_layer_types(f.values["--layer-types"], &s.layer_types)) {
    return usage_error("--layer-types: expected a comma list of linear / full");
  }
  s.vocab = f.num("--vocab", s.vocab);
  f.read_dims(&s);
  s.tie_embeddings = f.has("--tie");
  s.eos_token_id = f.num("--eos", -1);
  s.oracle_fixed_token = f.num("--oracle-token", s.oracle_fixed_token);
  s.oracle_period = f.num("--oracle-period", s.oracle_period);
  s.oracle_mask_token = f.num("--oracle-mask", -1);
  if (!f.numbers_ok) return usage_error("a numeric flag is not an integer");
  return finished(ferry::eval::write_tiny_target(out, s, write));
}

int drafter_command(Flags& f, const std::string& out, const ferry::eval::TinyWriteSpec& write) {
  ferry::eval::TinyDrafterSpec s;
  s.kind = f.text("--kind", "random");
  s.seed = static_cast<uint64_t>(f.num("--seed", 2));
  s.sliding_window = f.num("--sliding-window", 0);
  if (f.has("--layer-types") && !parse_layer_types(f.values["--layer-types"], &s.layer_types)) {
    return usage_error("--layer-types: expected a comma list of sliding / full");
  }
  s.target_vocab = f.num("--target-vocab", s.target_vocab);
  f.read_dims(&s);
  s.block_size = f.num("--block-size", s.block_size);
  s.mask_token_id = f.num("--mask", s.mask_token_id);
  s.num_target_layers = f.num("--num-target-layers", s.num_target_layers);
  if (f.has("--target-layer-ids")) {
    std::stringstream ids(f.values["--target-layer-ids"]);
    std::string item;
    while (std::getline(ids, item, ',')) {
      int64_t v = 0;
      if (!to_int(item, &v)) return usage_error("--target-layer-ids: bad id '" + item + "'");
      s.target_layer_ids.push_back(v);
    }
  }
  if (!f.numbers_ok) return usage_error("a numeric flag is not an integer");
  return finished(ferry::eval::write_tiny_drafter(out, s, write));
}

int prompts_command(Flags& f, const std::string& out) {
  int64_t count = f.num("--count", 20), vocab = f.num("--vocab", 320), lo = f.num("--min-len", 4),
          hi = f.num("--max-len", 24);
  int64_t seed = f.num("--seed", 3);
  if (!f.numbers_ok) return usage_error("a numeric flag is not an integer");
  return finished(ferry::eval::write_tiny_prompts(out, static_cast<int>(count), vocab, static_cast<int>(lo),
                                                  static_cast<int>(hi), static_cast<uint64_t>(seed)));
}

// `suite`: a ready set of random and oracle targets (Qwen3 and the Qwen3.5 hybrid),
// drafters including a sliding-window one, and prompts.
ferry::Status write_suite(const std::string& out) {
  using namespace ferry::eval;
  TinyTargetSpec target;
  target.eos_token_id = 257;
  FERRY_RETURN_IF_ERROR(write_tiny_target(out + "/target", target, {}));
  FERRY_RETURN_IF_ERROR(write_tiny_target(out + "/target-bf16-sharded", target, {"BF16", 3, false}));
  FERRY_RETURN_IF_ERROR(write_tiny_target(out + "/target-vlm", target, {"F32", 0, true}));
  TinyDrafterSpec drafter;
  drafter.mask_token_id = 258;
  drafter.target_layer_ids = {1, 2};
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(out + "/drafter", drafter, {}));
  drafter.seed = 5;
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(out + "/drafter-reference", drafter, {}));
  const TinyTargetSpec oracle = small_oracle_target_spec(3);
  FERRY_RETURN_IF_ERROR(write_tiny_target(out + "/oracle-target", oracle, {}));
  TinyDrafterSpec agree = drafter_spec_for(oracle);
  agree.kind = "agree";
  agree.mask_token_id = 63;
  agree.target_layer_ids = {1, 2};
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(out + "/oracle-agree", agree, {}));
  agree.kind = "disagree";
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(out + "/oracle-disagree", agree, {}));
  // Qwen3.5 hybrids: a random VLM-layout target, and an oracle one (layers linear,
  // linear, linear, full) that the oracle drafters above fit; a Qwen3.6-style drafter.
  TinyTargetSpec hybrid = target;
  hybrid.arch = "qwen3_5";
  FERRY_RETURN_IF_ERROR(write_tiny_target(out + "/hybrid-target-vlm", hybrid, {"F32", 0, true}));
  TinyTargetSpec hybrid_oracle = oracle;
  hybrid_oracle.arch = "qwen3_5";
  FERRY_RETURN_IF_ERROR(write_tiny_target(out + "/hybrid-oracle-target", hybrid_oracle, {}));
  agree.kind = "agree";
  agree.layer_types = {"sliding_attention", "full_attention"};
  agree.sliding_window = 8;
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(out + "/oracle-agree-swa", agree, {}));
  FERRY_RETURN_IF_ERROR(write_tiny_prompts(out + "/prompts.jsonl", 20, 320, 4, 24, 3));
  return write_tiny_prompts(out + "/oracle-prompts.jsonl", 20, 63, 4, 24, 4);
}

int run(const std::vector<std::string>& args) {
  if (args.empty()) return usage_error("missing command");
  const std::string cmd = args[0];
  Flags f;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--tie" || a == "--vlm" || a == "--stream") {
      f.values[a] = "1";
    } else if (a.rfind("--", 0) == 0 && i + 1 < args.size()) {
      f.values[a] = args[++i];
    } else {
      return usage_error("bad argument '" + a + "'");
    }
  }
  if (!f.has("--out")) return usage_error("--out is required");
  const std::string out = f.values["--out"];
  ferry::eval::TinyWriteSpec write;
  write.dtype = f.text("--dtype", "F32");
  write.shards = static_cast<int>(f.num("--shards", 0));
  write.vlm_wrapped = f.has("--vlm");
  if (cmd == "target") return target_command(f, out, write);
  if (cmd == "drafter") return drafter_command(f, out, write);
  if (cmd == "prompts") return prompts_command(f, out);
  if (cmd == "suite") return finished(write_suite(out));
  return usage_error("unknown command '" + cmd + "'");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  return run(args);
}
