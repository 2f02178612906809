// baseline_store: the target's plain baseline and the reference drafter's decode,
// kept once for every eval that would decode them the same way. In a watch (issue
// 43) every checkpoint's eval decoded them again, though they depend only on the
// target, the reference, the prompts and how they are decoded — about two thirds of
// each checkpoint's work. The first eval decodes them and writes them, with the
// baseline's tokens (each response is compared with them), to STORE/KEY.json; a
// later eval whose key is the same takes them from there: the same runs, so the same
// τ, tokens and counts as decoding them again, and the same timing (a reused
// baseline's speedup is against the timing the first eval measured; the report
// says so). The file lives beside the run on the eval's host, so a coordinator
// killed and resumed finds it.
//
// The key is a hash of the content of every file in the target and reference
// folders and of the prompts (and tokenizer) file (each file read once while it is
// unchanged: file_hash_cache.h), with the settings that change
// what is decoded or how fast: max_new_tokens, the reference's block size, the
// prompt format, device, dtype, threads, the baseline flag and the shard.
// Torch-free; any thread (one writer per store: a watch evaluates one checkpoint at
// a time, and a file is replaced whole, by rename).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "jobs/eval/run/eval_report.h"

namespace ferry::eval {

/// What one eval's runs hang on: files by content, settings by value.
struct BaselineInputs {
  std::string target;     // folder
  std::string reference;  // folder; "" = none
  std::string prompts;    // file
  std::string tokenizer;  // folder whose tokenizer.json is read; "" = the target's (hashed with it)
  /// Everything else that changes the runs (max_new_tokens, block size, dtype, ...).
  nlohmann::json settings = nlohmann::json::object();
  /// Where the files' hashes are remembered between evals (file_hash_cache.h); "" = nowhere.
  std::string hash_cache;
};

/// The hash cache's file in a store (kept with the runs).
std::string file_hash_cache_path(const std::string& store);

/// The hashed inputs as the store file keeps them (for a person comparing two keys),
/// or an error naming the file that could not be read.
Result<nlohmann::json> baseline_key_inputs(const BaselineInputs& in);

/// The key of those inputs: 32 hex digits.
std::string baseline_key(const nlohmann::json& key_inputs);

/// The runs one eval decoded that later evals with the same key take as they are.
struct StoredRuns {
  std::string key;
  nlohmann::json inputs;    // baseline_key_inputs
  std::string computed_by;  // the drafter of the eval that decoded them
  std::optional<DecodeRun> reference;
  std::optional<DecodeRun> baseline;
  std::vector<std::vector<int64_t>> baseline_tokens;  // per prompt, in order
};

/// STORE/KEY.json.
std::string stored_runs_path(const std::string& store, const std::string& key);

/// The runs stored under `key`; nullopt when none are; an error naming the file
/// when it is there but unreadable, of another key, or not of `prompts` responses
/// with a reference run iff `with_reference` and a baseline iff `with_baseline`.
Result<std::optional<StoredRuns>> read_stored_runs(const std::string& store, const std::string& key, int64_t prompts,
                                                   bool with_reference, bool with_baseline);

/// Writes `runs` to STORE/KEY.json (the folder made if missing), replacing it whole.
Status write_stored_runs(const std::string& store, const StoredRuns& runs);

}  // namespace ferry::eval
