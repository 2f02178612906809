// Datasets in one eval: `prompts: {gsm8k: FILE, humaneval: FILE}` (ferry eval
// --prompts NAME=FILE, repeated) decodes every file's prompts in one eval, one after
// the other in the order given, and the report gains a row per dataset beside the
// overall figures — as z-lab's DFlash README reports τ and speedup per benchmark.
// A dataset's τ is z-lab's mean of per-response means over its own responses, summed
// in the same order as an eval of that file alone, so the two are equal to the last
// bit; the overall figures stay over all responses. A row's τ, reference τ and
// speedup are computed from the report's per-response rows (finish_datasets), its
// drafted and accepted counts summed, so a merged sharded eval computes them as the
// whole does. Plain values and functions, no libtorch; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ferry::eval {

struct EvalReport;

/// One named prompts file of an eval (EvalSpec::datasets).
struct DatasetFile {
  std::string name;     // [A-Za-z0-9_.-], 1 to 100, unique in the eval
  std::string prompts;  // JSONL file (prompt_file.h)
};

/// One dataset's part of a report: which per-response rows are its, and its figures.
struct DatasetRow {
  std::string name;
  std::string file;
  int64_t first_prompt = 0;   // its first row in the report's per-response rows
  int64_t prompts = 0;        // its rows (a shard's report: its part of the file)
  int64_t prompt_total = 0;   // prompts in its file
  int64_t first_in_file = 0;  // a shard's part starts at this prompt of the file
  double tau = 0;             // mean over its responses of per-response mean acceptance length
  std::optional<double> reference_tau;
  std::optional<double> ratio_to_reference;
  double speedup = 0;           // mean TPOT baseline / mean TPOT candidate over its responses; 0 without baseline
  int64_t drafted_tokens = 0;   // the candidate's: steps × (block − 1)
  int64_t accepted_tokens = 0;  // drafts the target agreed with
  double acceptance_rate = 0;   // accepted / drafted
};

/// Drafted and accepted draft tokens of one response from its acceptance lengths
/// (accepted drafts + 1 per step): every step drafts block − 1 tokens, as vLLM and
/// llama.cpp count them.
struct AcceptanceCounts {
  int64_t drafted = 0;
  int64_t accepted = 0;
};
AcceptanceCounts acceptance_counts(const std::vector<int64_t>& acceptance_lengths, int64_t block_size);

/// accepted / drafted, 0 when nothing was drafted.
double acceptance_ratio(const AcceptanceCounts& c);

/// `NAME=FILE` (a dataset) or a plain FILE (name ""), as `ferry eval --prompts` takes
/// it. A value whose part before '=' is not a name ([A-Za-z0-9_.-]+, no '/') is a FILE.
DatasetFile parse_dataset_arg(const std::string& value);

/// A dataset name is [A-Za-z0-9_.-]+, 1 to 100 characters.
bool valid_dataset_name(const std::string& name);

/// Every dataset named validly, once, with a file; `prompts` (one file) not also set.
Status check_datasets(const std::vector<DatasetFile>& datasets, const std::string& prompts);

/// [{name, content}]: each dataset's name and its file's content hash (xxh128), in
/// order — what a stored baseline for these prompts is keyed by.
Result<nlohmann::json> datasets_content(const std::vector<DatasetFile>& datasets);

/// The report's `prompts` line for a set of datasets: "gsm8k=a.jsonl humaneval=b.jsonl".
std::string describe_datasets(const std::vector<DatasetFile>& datasets);

/// Each row's drafted and accepted tokens from the candidate's responses (the
/// engine's report, which holds every response; a merge sums its parts' counts).
void count_dataset_acceptance(EvalReport* report);

/// Each row's figures from the report's per-response rows (candidate, reference and
/// baseline response_taus / response_tpots) and its counts.
void finish_datasets(EvalReport* report);

/// The dataset table as text, datasets as columns (the paper's layout); "" for none.
std::string datasets_text(const EvalReport& report);

}  // namespace ferry::eval
