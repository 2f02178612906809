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

int run(const std::vector<std::string>& args) {
  if (args.empty()) return usage_error("missing command");
  const std::string cmd = args[0];
  std::map<std::string, std::string> flags;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--tie" || a == "--vlm" || a == "--stream") {
      flags[a] = "1";
    } else if (a.rfind("--", 0) == 0 && i + 1 < args.size()) {
      flags[a] = args[++i];
    } else {
      return usage_error("bad argument '" + a + "'");
    }
  }
  if (!flags.count("--out")) return usage_error("--out is required");
  const std::string out = flags["--out"];
  bool ok = true;
  auto num = [&](const char* flag, int64_t def) {
    auto it = flags.find(flag);
    if (it == flags.end()) return def;
    int64_t v = 0;
    if (!to_int(it->second, &v)) ok = false;
    return v;
  };
  auto read_dims = [&](ferry::eval::TinyLayerDims* d) {
    d->hidden = num("--hidden", d->hidden);
    d->intermediate = num("--intermediate", d->intermediate);
    d->layers = num("--layers", d->layers);
    d->heads = num("--heads", d->heads);
    d->kv_heads = num("--kv-heads", d->kv_heads);
    d->head_dim = num("--head-dim", d->head_dim);
  };
  ferry::eval::TinyWriteSpec write;
  write.dtype = flags.count("--dtype") ? flags["--dtype"] : "F32";
  write.shards = static_cast<int>(num("--shards", 0));
  write.vlm_wrapped = flags.count("--vlm") != 0;
  ferry::Status status;
  if (cmd == "target") {
    ferry::eval::TinyTargetSpec s;
    s.kind = flags.count("--kind") ? flags["--kind"] : "random";
    s.arch = flags.count("--arch") ? flags["--arch"] : "qwen3";
    s.seed = static_cast<uint64_t>(num("--seed", 1));
    s.linear_key_heads = num("--linear-key-heads", s.linear_key_heads);
    s.linear_value_heads = num("--linear-value-heads", s.linear_value_heads);
    s.linear_key_dim = num("--linear-key-dim", s.linear_key_dim);
    s.linear_value_dim = num("--linear-value-dim", s.linear_value_dim);
    s.conv_kernel = num("--conv-kernel", s.conv_kernel);
    s.streamed = flags.count("--stream") != 0;
    if (flags.count("--rope-theta")) s.rope_theta = std::strtod(flags["--rope-theta"].c_str(), nullptr);
    if (flags.count("--layer-types") && !parse_layer_types(flags["--layer-types"], &s.layer_types)) {
      return usage_error("--layer-types: expected a comma list of linear / full");
    }
    s.vocab = num("--vocab", s.vocab);
    read_dims(&s);
    s.tie_embeddings = flags.count("--tie") != 0;
    s.eos_token_id = num("--eos", -1);
    s.oracle_fixed_token = num("--oracle-token", s.oracle_fixed_token);
    s.oracle_period = num("--oracle-period", s.oracle_period);
    s.oracle_mask_token = num("--oracle-mask", -1);
    if (!ok) return usage_error("a numeric flag is not an integer");
    status = ferry::eval::write_tiny_target(out, s, write);
  } else if (cmd == "drafter") {
    ferry::eval::TinyDrafterSpec s;
    s.kind = flags.count("--kind") ? flags["--kind"] : "random";
    s.seed = static_cast<uint64_t>(num("--seed", 2));
    s.sliding_window = num("--sliding-window", 0);
    if (flags.count("--layer-types") && !parse_layer_types(flags["--layer-types"], &s.layer_types)) {
      return usage_error("--layer-types: expected a comma list of sliding / full");
    }
    s.target_vocab = num("--target-vocab", s.target_vocab);
    read_dims(&s);
    s.block_size = num("--block-size", s.block_size);
    s.mask_token_id = num("--mask", s.mask_token_id);
    s.num_target_layers = num("--num-target-layers", s.num_target_layers);
    if (flags.count("--target-layer-ids")) {
      std::stringstream ids(flags["--target-layer-ids"]);
      std::string item;
      while (std::getline(ids, item, ',')) {
        int64_t v = 0;
        if (!to_int(item, &v)) return usage_error("--target-layer-ids: bad id '" + item + "'");
        s.target_layer_ids.push_back(v);
      }
    }
    if (!ok) return usage_error("a numeric flag is not an integer");
    status = ferry::eval::write_tiny_drafter(out, s, write);
  } else if (cmd == "prompts") {
    int64_t count = num("--count", 20), vocab = num("--vocab", 320), lo = num("--min-len", 4),
            hi = num("--max-len", 24);
    int64_t seed = num("--seed", 3);
    if (!ok) return usage_error("a numeric flag is not an integer");
    status = ferry::eval::write_tiny_prompts(out, static_cast<int>(count), vocab, static_cast<int>(lo),
                                             static_cast<int>(hi), static_cast<uint64_t>(seed));
  } else if (cmd == "suite") {
    using namespace ferry::eval;
    TinyTargetSpec target;
    target.eos_token_id = 257;
    status = write_tiny_target(out + "/target", target, {});
    if (status.ok()) status = write_tiny_target(out + "/target-bf16-sharded", target, {"BF16", 3, false});
    if (status.ok()) status = write_tiny_target(out + "/target-vlm", target, {"F32", 0, true});
    TinyDrafterSpec drafter;
    drafter.mask_token_id = 258;
    drafter.target_layer_ids = {1, 2};
    if (status.ok()) status = write_tiny_drafter(out + "/drafter", drafter, {});
    drafter.seed = 5;
    if (status.ok()) status = write_tiny_drafter(out + "/drafter-reference", drafter, {});
    TinyTargetSpec oracle;
    oracle.kind = "oracle";
    oracle.vocab = 64;
    oracle.hidden = 96;
    oracle.heads = 6;
    oracle.oracle_period = 3;
    oracle.oracle_mask_token = 63;
    if (status.ok()) status = write_tiny_target(out + "/oracle-target", oracle, {});
    TinyDrafterSpec agree = drafter_spec_for(oracle);
    agree.kind = "agree";
    agree.mask_token_id = 63;
    agree.target_layer_ids = {1, 2};
    if (status.ok()) status = write_tiny_drafter(out + "/oracle-agree", agree, {});
    agree.kind = "disagree";
    if (status.ok()) status = write_tiny_drafter(out + "/oracle-disagree", agree, {});
    // Qwen3.5 hybrids: a random VLM-layout target, and an oracle one (layers linear,
    // linear, linear, full) that the oracle drafters above fit; a Qwen3.6-style drafter.
    TinyTargetSpec hybrid = target;
    hybrid.arch = "qwen3_5";
    if (status.ok()) status = write_tiny_target(out + "/hybrid-target-vlm", hybrid, {"F32", 0, true});
    TinyTargetSpec hybrid_oracle = oracle;
    hybrid_oracle.arch = "qwen3_5";
    if (status.ok()) status = write_tiny_target(out + "/hybrid-oracle-target", hybrid_oracle, {});
    agree.kind = "agree";
    agree.layer_types = {"sliding_attention", "full_attention"};
    agree.sliding_window = 8;
    if (status.ok()) status = write_tiny_drafter(out + "/oracle-agree-swa", agree, {});
    if (status.ok()) status = write_tiny_prompts(out + "/prompts.jsonl", 20, 320, 4, 24, 3);
    if (status.ok()) status = write_tiny_prompts(out + "/oracle-prompts.jsonl", 20, 63, 4, 24, 4);
  } else {
    return usage_error("unknown command '" + cmd + "'");
  }
  if (!status.ok()) {
    std::cerr << "ferry-tiny-models: " << status.message() << "\n";
    return 1;
  }
  return 0;
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
