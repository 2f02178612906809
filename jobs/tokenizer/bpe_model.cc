#include "jobs/tokenizer/bpe_model.h"

#include <queue>

#include "jobs/tokenizer/byte_level.h"

namespace ferry::tokenizer {
namespace {

// Bounds on the word cache: long words are rare and would crowd it; when full it is
// cleared rather than managed (a prompt set's vocabulary refills it within a few prompts).
constexpr size_t kMaxCachedWordBytes = 64;
constexpr size_t kMaxCacheEntries = 1 << 18;

}  // namespace

Result<BpeModel> BpeModel::create(const std::unordered_map<std::string, int32_t>& vocab,
                                  const std::vector<std::pair<std::string, std::string>>& merges) {
  BpeModel m;
  const auto& alphabet = byte_level_alphabet();
  for (int b = 0; b < 256; ++b) {
    auto it = vocab.find(alphabet[b]);
    if (it == vocab.end()) {
      return invalid_argument("BPE vocabulary lacks the byte-level token for byte " + std::to_string(b) +
                              " ('" + alphabet[b] + "'): not a byte-level vocabulary");
    }
    m.byte_ids_[b] = it->second;
  }
  m.merges_.reserve(merges.size() * 2);
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    auto l = vocab.find(left);
    auto r = vocab.find(right);
    auto merged = vocab.find(left + right);
    if (l == vocab.end() || r == vocab.end() || merged == vocab.end()) {
      return invalid_argument("BPE merge " + std::to_string(rank) + " ('" + left + "' '" + right +
                              "') names a token not in the vocabulary");
    }
    // A pair listed twice keeps its first (best) rank, as Hugging Face does.
    m.merges_.emplace(pair_key(l->second, r->second), Merge{static_cast<int32_t>(rank), merged->second});
  }
  return m;
}

void BpeModel::encode_word(std::string_view bytes, std::vector<int32_t>* out) {
  if (bytes.size() <= kMaxCachedWordBytes) {
    auto it = cache_.find(std::string(bytes));
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t first = out->size();
  merge_symbols(bytes, out);
  if (bytes.size() <= kMaxCachedWordBytes) {
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(bytes), std::vector<int32_t>(out->begin() + first, out->end()));
  }
}

void BpeModel::merge_symbols(std::string_view bytes, std::vector<int32_t>* out) const {
  const int n = static_cast<int>(bytes.size());
  if (n == 0) return;
  if (n == 1) {
    out->push_back(byte_ids_[static_cast<unsigned char>(bytes[0])]);
    return;
  }
  // Symbols as a doubly linked list over positions; a merged-away symbol gets id -1.
  std::vector<int32_t> id(n), prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    id[i] = byte_ids_[static_cast<unsigned char>(bytes[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  // Candidate merges, best rank first, then leftmost. An entry can go stale when a
  // neighbour merged first; it is checked against the current pair when popped.
  struct Candidate {
    int32_t rank;
    int32_t pos;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto push = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    auto it = merges_.find(pair_key(id[left], id[next[left]]));
    if (it != merges_.end()) queue.push({it->second.rank, left});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    int left = c.pos;
    if (id[left] < 0 || next[left] < 0) continue;
    int right = next[left];
    auto it = merges_.find(pair_key(id[left], id[right]));
    if (it == merges_.end() || it->second.rank != c.rank) continue;  // stale
    id[left] = it->second.merged_id;
    id[right] = -1;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    push(prev[left]);
    push(left);
  }
  for (int i = 0; i >= 0; i = next[i]) out->push_back(id[i]);
}

}  // namespace ferry::tokenizer
