// The sharded form of an eval of named datasets (eval_datasets.h): shard i of n
// decodes the i-th contiguous part of every dataset's file, so each shard sees every
// dataset. shard_merge.cc checks each part with check_dataset_part and, once the runs
// are joined shard by shard, puts the per-response rows back in the whole eval's order
// (dataset by dataset, each in file order) with order_rows_by_dataset, so τ and every
// dataset's figures are summed in the same order as the unsharded eval: the same
// values to the last bit. Plain functions, no libtorch; any thread.
#pragma once

#include <cstddef>
#include <vector>

#include "base/status.h"
#include "jobs/eval/run/eval_report.h"

namespace ferry::eval {

/// `s` is shard i of n of the datasets `first` (shard 1) decoded: the same datasets
/// in the same order, each with its i-th part, its rows in order. Errors name the
/// shard and the dataset.
Status check_dataset_part(const EvalReport& s, const EvalReport& first, size_t i, size_t n);

/// `merged` holds the shards' rows one shard after another (merge_runs): reorders
/// every run's per-response rows and the responses into dataset order, recomputes the
/// runs' figures (finish_decode_run) and sets the dataset rows of the whole.
Status order_rows_by_dataset(const std::vector<EvalReport>& shards, EvalReport* merged);

}  // namespace ferry::eval
