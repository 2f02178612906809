// model_fingerprint: a cheap identity of a model folder one eval loads, so that the
// merge of a sharded eval can tell that every shard loaded the same checkpoints, not
// merely files under the same path on each host (review-faults-4 P6; the prompts are
// compared by prompts_fingerprint, run/prompt_file.h). Torch-free.
//
// A model folder's fingerprint is XXH3-128 over, for every regular file at its top level
// (sorted by name, links followed as the loader follows them; ferry's copy bookkeeping
// skipped, transfer/copy_bookkeeping.h, so a folder ferry copied fingerprints as its
// source does):
//   - the file's name and size;
//   - a file of at most kWholeFileBytes (config.json, the safetensors index,
//     tokenizer.json, generation_config.json, a small drafter's weights): every byte;
//   - a larger .safetensors file: its whole header (every tensor's name, dtype, shape and
//     offsets, and the metadata) and kSampleBlocks blocks of kSampleBytes spread evenly
//     over its tensor data, the first and the last included;
//   - any other larger file: kSampleBlocks blocks spread evenly over all of it.
// It reads a few MiB however large the checkpoint (a 17 GB target: its headers and
// 64 × 4 KiB per shard file), where a hash of every byte would read it all from disk.
// Two checkpoints of one model at different training steps have the same headers and
// sizes, but training moves essentially every weight, so their sampled blocks differ.
//
// NOT covered: bytes no sample reads. Two folders with the same file names, sizes,
// small files and safetensors headers whose tensor data differs only between the
// sampled blocks (one tensor edited by hand, a few weights changed) fingerprint the
// same. Where ferry copied the folder, its completion marker (.ferry-complete) holds
// the copy's manifest hash, which covers every byte of every file; the report keeps it
// beside the fingerprint (copy_manifest_hash), and the merge compares it where both
// shards have one. It is never used in place of the fingerprint: a folder rewritten by
// hand after the copy keeps its old marker.
//
// Plain functions over files; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace ferry::eval {

/// Files up to this size are hashed whole.
inline constexpr int64_t kWholeFileBytes = int64_t{16} << 20;
/// Larger files: this many blocks of kSampleBytes, spread evenly.
inline constexpr int kSampleBlocks = 64;
inline constexpr int64_t kSampleBytes = 4096;

/// Every regular file at the top of `folder` (links followed, as the loader follows
/// them), by name, sorted: what a model folder is (the baseline store's key hashes
/// them whole, baseline_store.h). An error when the folder cannot be listed.
Result<std::vector<std::string>> model_folder_files(const std::string& folder);

/// The fingerprint (32 hex digits) of a model folder, or of one file (then: its size
/// and content summary as above, without its name); an error naming the file that
/// could not be read.
Result<std::string> model_fingerprint(const std::string& path);

/// The manifest hash in `folder`/.ferry-complete (32 hex digits), where ferry's copy
/// finished one; "" when there is none (or it holds anything else).
std::string copy_manifest_hash(const std::string& folder);

}  // namespace ferry::eval
