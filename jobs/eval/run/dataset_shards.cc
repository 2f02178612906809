#include "jobs/eval/run/dataset_shards.h"

#include <string>

#include "base/json_fields.h"

namespace ferry::eval {
namespace {

std::string shard_name(size_t i, size_t n) { return "shard " + std::to_string(i + 1) + " of " + std::to_string(n); }

// rows[order[0]], rows[order[1]], ...; a vector that is not one row per response
// (an older report without it) is left as it is.
template <typename Row>
void permute(std::vector<Row>* rows, const std::vector<size_t>& order) {
  if (rows->size() != order.size()) return;
  std::vector<Row> out;
  out.reserve(order.size());
  for (size_t k : order) out.push_back(std::move((*rows)[k]));
  *rows = std::move(out);
}

void permute_run(DecodeRun* run, const std::vector<size_t>& order) {
  permute(&run->response_taus, order);
  permute(&run->response_tpots, order);
  finish_decode_run(run);
}

}  // namespace

Status check_dataset_part(const EvalReport& s, const EvalReport& first, size_t i, size_t n) {
  const std::string at = shard_name(i, n);
  if (s.datasets.size() != first.datasets.size()) {
    return invalid_argument(at + " decoded " + std::to_string(s.datasets.size()) + " datasets, shard 1 " +
                            std::to_string(first.datasets.size()));
  }
  int64_t row = 0;
  for (size_t k = 0; k < s.datasets.size(); ++k) {
    const DatasetRow& d = s.datasets[k];
    const DatasetRow& f = first.datasets[k];
    if (d.name != f.name || d.file != f.file || d.prompt_total != f.prompt_total) {
      return invalid_argument(at + " decoded dataset " + std::to_string(k + 1) + " '" + d.name + "' (" + d.file + ", " +
                              std::to_string(d.prompt_total) + " prompts), shard 1 '" + f.name + "' (" + f.file + ", " +
                              std::to_string(f.prompt_total) + ")");
    }
    if (d.prompt_total < 0 || d.prompt_total > static_cast<int64_t>(kMaxJsonItems)) {
      return invalid_argument(at + ": dataset '" + d.name + "' has " + std::to_string(d.prompt_total) + " prompts");
    }
    const ShardOf want = ShardOf::slice(static_cast<int>(i), static_cast<int>(n), d.prompt_total);
    const int64_t count =
        ShardOf::slice(static_cast<int>(i) + 1, static_cast<int>(n), d.prompt_total).first_prompt - want.first_prompt;
    if (d.first_in_file != want.first_prompt || d.prompts != count || d.first_prompt != row) {
      return invalid_argument(at + " decoded " + std::to_string(d.prompts) + " prompts of dataset '" + d.name +
                              "' from " + std::to_string(d.first_in_file + 1) + " (rows from " +
                              std::to_string(d.first_prompt + 1) + "); its part is " + std::to_string(count) +
                              " from " + std::to_string(want.first_prompt + 1) + " of " +
                              std::to_string(d.prompt_total));
    }
    row += d.prompts;
  }
  if (s.prompt_count != row || s.candidate.responses != row) {
    return invalid_argument(at + " decoded " + std::to_string(s.candidate.responses) +
                            " prompts; its datasets' parts are " + std::to_string(row));
  }
  return Status();
}

Status order_rows_by_dataset(const std::vector<EvalReport>& shards, EvalReport* merged) {
  std::vector<int64_t> shard_offset;  // where each shard's rows begin in the joined runs
  int64_t rows = 0;
  for (const auto& s : shards) {
    shard_offset.push_back(rows);
    rows += s.prompt_count;
  }
  std::vector<size_t> order;
  std::vector<DatasetRow> whole;
  for (size_t k = 0; k < shards[0].datasets.size(); ++k) {
    DatasetRow d = shards[0].datasets[k];
    d.first_prompt = static_cast<int64_t>(order.size());
    d.first_in_file = 0;
    d.prompts = 0;
    d.drafted_tokens = d.accepted_tokens = 0;  // summed: a stored shard may have dropped responses
    for (size_t i = 0; i < shards.size(); ++i) {
      const DatasetRow& part = shards[i].datasets[k];
      d.drafted_tokens += part.drafted_tokens;
      d.accepted_tokens += part.accepted_tokens;
      for (int64_t r = 0; r < part.prompts; ++r) {
        order.push_back(static_cast<size_t>(shard_offset[i] + part.first_prompt + r));
      }
      d.prompts += part.prompts;
    }
    whole.push_back(d);
  }
  if (static_cast<int64_t>(order.size()) != rows) {
    return invalid_argument("the shards' datasets hold " + std::to_string(order.size()) + " prompts of " +
                            std::to_string(rows) + " decoded");
  }
  permute_run(&merged->candidate, order);
  if (merged->reference_run) permute_run(&*merged->reference_run, order);
  if (merged->baseline) permute_run(&*merged->baseline, order);
  permute(&merged->responses, order);
  merged->datasets = std::move(whole);
  return Status();
}

}  // namespace ferry::eval
