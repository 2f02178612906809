#include "jobs/eval/run/baseline_store.h"

#include <algorithm>

#include "base/file_hash.h"
#include "base/file_util.h"
#include "base/json_field_writer.h"
#include "base/json_fields.h"
#include "jobs/eval/run/file_hash_cache.h"
#include "jobs/eval/io/model_fingerprint.h"
#include "jobs/eval/run/report_fields.h"

namespace ferry::eval {
namespace {

// A stored file holds a few runs and the baseline's tokens: a few MiB for thousands of responses.
constexpr size_t kMaxStoredRunsBytes = size_t{256} << 20;

// Every regular file at the top of `folder` (model_folder_files), by name, with the
// hash of its content: what a model folder is.
Result<nlohmann::json> folder_content(const std::string& folder, FileHashCache* hashes) {
  auto names = model_folder_files(folder);
  if (!names.ok()) return names.status().with_context("baseline key");
  nlohmann::json files = nlohmann::json::object();
  for (const auto& name : *names) {
    auto hash = hashes->xxh128(join_path(folder, name));
    if (!hash.ok()) return hash.status().with_context("baseline key");
    files[name] = *hash;
  }
  return files;
}

// The stored file's fields, both sides (json_field_writer.h).
constexpr auto stored_runs_fields = [](auto& v, auto& s) {
  v("key", s.key);
  v("computed_by", s.computed_by);
  v.object("reference", s.reference, decode_run_fields);
  v.object("baseline", s.baseline, decode_run_fields);
};

// baseline_tokens: an array per prompt of token ids (a list of lists, which the
// field lists do not read).
Status read_tokens(const nlohmann::json& j, std::vector<std::vector<int64_t>>* out) {
  auto it = j.find("baseline_tokens");
  if (it == j.end() || it->is_null()) return Status();
  if (!it->is_array() || it->size() > kMaxJsonItems) return invalid_argument("baseline_tokens is not a list of lists");
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& ids = (*it)[i];
    const bool ints =
        ids.is_array() && ids.size() <= kMaxJsonItems &&
        std::all_of(ids.begin(), ids.end(), [](const nlohmann::json& x) { return x.is_number_integer(); });
    if (!ints) return invalid_argument("baseline_tokens[" + std::to_string(i) + "] is not a list of token ids");
    out->push_back(ids.get<std::vector<int64_t>>());
  }
  return Status();
}

Status check_stored(const StoredRuns& s, const std::string& key, int64_t prompts, bool with_reference,
                    bool with_baseline) {
  if (s.key != key) return invalid_argument("holds key '" + s.key + "', not '" + key + "'");
  if (s.reference.has_value() != with_reference) {
    return invalid_argument(with_reference ? "has no reference run" : "has a reference run this eval has not");
  }
  if (s.baseline.has_value() != with_baseline) {
    return invalid_argument(with_baseline ? "has no baseline run" : "has a baseline run this eval has not");
  }
  if (s.reference && s.reference->responses != prompts) {
    return invalid_argument("its reference run has " + std::to_string(s.reference->responses) + " responses, not " +
                            std::to_string(prompts));
  }
  if (s.baseline && (s.baseline->responses != prompts || static_cast<int64_t>(s.baseline_tokens.size()) != prompts)) {
    return invalid_argument("its baseline has " + std::to_string(s.baseline_tokens.size()) + " responses, not " +
                            std::to_string(prompts));
  }
  return Status();
}

}  // namespace

Result<nlohmann::json> baseline_key_inputs(const BaselineInputs& in) {
  nlohmann::json j = {{"version", 1}, {"settings", in.settings}};
  FileHashCache hashes(in.hash_cache);
  auto target = folder_content(in.target, &hashes);
  if (!target.ok()) return target.status();
  j["target"] = std::move(*target);
  if (!in.reference.empty()) {
    auto reference = folder_content(in.reference, &hashes);
    if (!reference.ok()) return reference.status();
    j["reference"] = std::move(*reference);
  }
  auto prompts = hashes.xxh128(in.prompts);
  if (!prompts.ok()) return prompts.status().with_context("baseline key");
  j["prompts"] = *prompts;
  if (!in.tokenizer.empty()) {
    auto tokenizer = hashes.xxh128(join_path(in.tokenizer, "tokenizer.json"));
    if (!tokenizer.ok()) return tokenizer.status().with_context("baseline key");
    j["tokenizer"] = *tokenizer;
  }
  (void)hashes.save();  // it only saves time: a store that cannot keep it still works
  return j;
}

std::string file_hash_cache_path(const std::string& store) { return join_path(store, "file-hashes.json"); }

std::string baseline_key(const nlohmann::json& key_inputs) {
  const std::string text = key_inputs.dump();  // nlohmann's objects are sorted by key
  return xxh128_hex(text.data(), text.size());
}

std::string stored_runs_path(const std::string& store, const std::string& key) {
  return join_path(store, key + ".json");
}

Result<std::optional<StoredRuns>> read_stored_runs(const std::string& store, const std::string& key, int64_t prompts,
                                                   bool with_reference, bool with_baseline) {
  const std::string path = stored_runs_path(store, key);
  if (!path_exists(path)) return std::optional<StoredRuns>();
  auto text = read_file(path, kMaxStoredRunsBytes);
  if (!text.ok()) return text.status();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return invalid_argument(path + ": not JSON (cut short while written?)");
  auto runs = fields_from_json<StoredRuns>(j, path, stored_runs_fields);
  if (!runs.ok()) return runs.status();
  Status tokens = read_tokens(j, &runs->baseline_tokens);
  if (!tokens.ok()) return invalid_argument(path + ": " + tokens.message());
  Status fits = check_stored(*runs, key, prompts, with_reference, with_baseline);
  if (!fits.ok()) return invalid_argument(path + " " + fits.message());
  if (j.contains("inputs")) runs->inputs = j["inputs"];
  return std::optional<StoredRuns>(std::move(*runs));
}

Status write_stored_runs(const std::string& store, const StoredRuns& runs) {
  FERRY_RETURN_IF_ERROR(make_dirs(store));
  nlohmann::json j = fields_json(runs, stored_runs_fields);
  j["inputs"] = runs.inputs;
  j["baseline_tokens"] = runs.baseline_tokens;
  return write_file_atomic(stored_runs_path(store, runs.key), j.dump());
}

}  // namespace ferry::eval
