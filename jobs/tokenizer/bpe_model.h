// BpeModel: byte-level BPE as Hugging Face's `BPE` model runs it — a word's bytes start as
// one symbol each, and the adjacent pair with the lowest merge rank is merged (leftmost
// first among equals) until no pair has a merge. Encoded words are cached: text repeats
// words, and a cache hit skips the merge loop.
//
// Not thread-safe (the cache): one model per thread, or external locking.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace ferry::tokenizer {

class BpeModel {
 public:
  /// `vocab`: byte-level token string → id. `merges`: pairs of token strings, best first.
  /// Every byte's stand-in character must be in the vocabulary (no unknown token), and
  /// every merge's parts and result too; errors name the first one missing.
  static Result<BpeModel> create(const std::unordered_map<std::string, int32_t>& vocab,
                                 const std::vector<std::pair<std::string, std::string>>& merges);

  /// Appends the ids of one pre-token (raw bytes, not byte-level text) to `out`.
  void encode_word(std::string_view bytes, std::vector<int32_t>* out);

  size_t merge_count() const { return merges_.size(); }
  size_t cache_size() const { return cache_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t merged_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void merge_symbols(std::string_view bytes, std::vector<int32_t>* out) const;

  int32_t byte_ids_[256] = {};
  std::unordered_map<uint64_t, Merge> merges_;
  std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace ferry::tokenizer
