#include "tests/eval/eval_test_util.h"

#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "jobs/eval/io/safetensors_reader.h"
#include "jobs/eval/io/safetensors_writer.h"

namespace ferry::eval::testing {

ScratchDir::ScratchDir(const std::string& tag) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/ferry-eval-" + tag + "-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  path_ = buf.data();
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

TinyTargetSpec random_target_spec(uint64_t seed) {
  TinyTargetSpec s;
  s.seed = seed;
  return s;
}

TinyDrafterSpec random_drafter_spec(uint64_t seed, int64_t block_size) {
  TinyDrafterSpec d;
  d.seed = seed;
  d.block_size = block_size;
  d.mask_token_id = 300;
  d.target_layer_ids = {1, 3};
  return d;
}

TinyTargetSpec oracle_target_spec(int64_t period) {
  TinyTargetSpec s = small_oracle_target_spec(period);
  s.layers = 3;
  s.seed = 21 + static_cast<uint64_t>(period);
  return s;
}

TinyDrafterSpec oracle_drafter_spec(const std::string& kind, int64_t block_size) {
  TinyDrafterSpec d = drafter_spec_for(oracle_target_spec(1));
  d.kind = kind;
  d.block_size = block_size;
  d.mask_token_id = 63;
  d.target_layer_ids = {0, 2};
  d.seed = kind == "agree" ? 31 : 32;
  return d;
}

TinyTargetSpec hybrid_target_spec(uint64_t seed) {
  TinyTargetSpec s;
  s.arch = "qwen3_5";
  s.seed = seed;
  return s;
}

TinyTargetSpec hybrid_oracle_target_spec(int64_t period) {
  TinyTargetSpec s = oracle_target_spec(period);
  s.arch = "qwen3_5";
  s.layers = 4;
  s.layer_types = {"linear_attention", "full_attention", "linear_attention", "linear_attention"};
  s.seed = 51 + static_cast<uint64_t>(period);
  return s;
}

TinyDrafterSpec hybrid_oracle_drafter_spec(const std::string& kind, int64_t block_size) {
  TinyDrafterSpec d = oracle_drafter_spec(kind, block_size);
  d.target_layer_ids = {1, 3};
  d.num_target_layers = 4;
  return d;
}

Status write_decoding_models(const std::string& dir) {
  FERRY_RETURN_IF_ERROR(write_tiny_target(dir + "/random", random_target_spec(), {}));
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(dir + "/random-drafter", random_drafter_spec(), {}));
  FERRY_RETURN_IF_ERROR(write_tiny_target(dir + "/oracle-const", oracle_target_spec(1), {}));
  FERRY_RETURN_IF_ERROR(write_tiny_target(dir + "/oracle-mixed", oracle_target_spec(3), {}));
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(dir + "/agree", oracle_drafter_spec("agree"), {}));
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(dir + "/disagree", oracle_drafter_spec("disagree"), {}));
  // Qwen3.5 hybrids: every rejected draft rolls Gated DeltaNet states back.
  FERRY_RETURN_IF_ERROR(write_tiny_target(dir + "/hybrid-random", hybrid_target_spec(), {}));
  FERRY_RETURN_IF_ERROR(write_tiny_target(dir + "/hybrid-const", hybrid_oracle_target_spec(1), {}));
  FERRY_RETURN_IF_ERROR(write_tiny_target(dir + "/hybrid-mixed", hybrid_oracle_target_spec(3), {}));
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(dir + "/hybrid-agree", hybrid_oracle_drafter_spec("agree"), {}));
  return write_tiny_drafter(dir + "/hybrid-disagree", hybrid_oracle_drafter_spec("disagree"), {});
}

Status write_oracle_models(const std::string& dir, int64_t period) {
  FERRY_RETURN_IF_ERROR(write_tiny_target(dir + "/target", oracle_target_spec(period), {}));
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(dir + "/agree", oracle_drafter_spec("agree", 8), {}));
  return write_tiny_drafter(dir + "/disagree", oracle_drafter_spec("disagree", 8), {});
}

Status write_oracle_eval_models(const std::string& dir) {
  FERRY_RETURN_IF_ERROR(write_tiny_target(dir + "/target", oracle_target_spec(3), {}));
  FERRY_RETURN_IF_ERROR(write_tiny_drafter(dir + "/drafter", oracle_drafter_spec("agree", 16), {}));
  return write_tiny_drafter(dir + "/reference", oracle_drafter_spec("disagree", 16), {});
}

EvalSpec oracle_eval_spec(const std::string& dir, int index, int count) {
  EvalSpec s;
  s.target = dir + "/target";
  s.drafter = dir + "/drafter";
  s.reference = dir + "/reference";
  s.max_new_tokens = 16;
  s.threads = 1;
  s.shard_index = index;
  s.shard_count = count;
  return s;
}

std::vector<std::vector<int64_t>> make_prompts(int count, int64_t vocab, int min_len, int max_len, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::vector<int64_t>> out;
  for (int i = 0; i < count; ++i) {
    int len = min_len + static_cast<int>(gen() % static_cast<uint64_t>(max_len - min_len + 1));
    std::vector<int64_t> p;
    for (int k = 0; k < len; ++k) p.push_back(static_cast<int64_t>(gen() % static_cast<uint64_t>(vocab)));
    out.push_back(p);
  }
  return out;
}

int overwrite_tensor_bytes(const std::string& folder, const std::function<bool(const std::string&)>& which) {
  auto ckpt = SafetensorsCheckpoint::open(folder);
  if (!ckpt.ok()) throw std::runtime_error(ckpt.status().message());
  std::string bytes = read_text(folder + "/model.safetensors");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(bytes[i]);
  int count = 0;
  for (const std::string& name : (*ckpt)->names()) {
    if (!which(name)) continue;
    auto info = (*ckpt)->info(name);
    if (!info.ok()) throw std::runtime_error(info.status().message());
    for (uint64_t i = info->begin; i < info->end; ++i) bytes[8 + header_len + i] = '\xff';
    ++count;
  }
  ckpt->reset();
  write_text(folder + "/model.safetensors", bytes);
  return count;
}

void split_checkpoint_in_two(const std::string& folder, const std::function<bool(const std::string&)>& second) {
  auto ckpt = SafetensorsCheckpoint::open(folder + "/model.safetensors");
  if (!ckpt.ok()) throw std::runtime_error(ckpt.status().message());
  std::vector<WriteTensor> first_part, second_part;
  for (const std::string& name : (*ckpt)->names()) {
    auto rec = (*ckpt)->read(name);
    if (!rec.ok()) throw std::runtime_error(rec.status().message());
    WriteTensor t{name, rec->info.shape, std::vector<float>(static_cast<size_t>(rec->info.numel())), "", {}};
    std::memcpy(t.values.data(), rec->data, rec->nbytes);
    (second(name) ? second_part : first_part).push_back(std::move(t));
  }
  ckpt->reset();
  std::filesystem::remove(folder + "/model.safetensors");
  nlohmann::json index;
  std::vector<const WriteTensor*> a, b;
  for (const auto& t : first_part) {
    a.push_back(&t);
    index["weight_map"][t.name] = "model-00001-of-00002.safetensors";
  }
  for (const auto& t : second_part) {
    b.push_back(&t);
    index["weight_map"][t.name] = "model-00002-of-00002.safetensors";
  }
  for (const auto& [path, part] : {std::pair{folder + "/model-00001-of-00002.safetensors", &a},
                                   std::pair{folder + "/model-00002-of-00002.safetensors", &b}}) {
    Status s = write_safetensors_file(path, *part, "F32", {});
    if (!s.ok()) throw std::runtime_error(s.message());
  }
  write_text(folder + "/model.safetensors.index.json", index.dump());
}

}  // namespace ferry::eval::testing
