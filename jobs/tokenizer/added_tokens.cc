#include "jobs/tokenizer/added_tokens.h"

#include <algorithm>

namespace ferry::tokenizer {

AddedTokens::AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  tokens_.erase(std::remove_if(tokens_.begin(), tokens_.end(), [](const AddedToken& t) { return t.content.empty(); }),
                tokens_.end());
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  for (const auto& t : tokens_) starts_[static_cast<unsigned char>(t.content[0])] = true;
}

std::vector<AddedTokens::Piece> AddedTokens::split(std::string_view text) const {
  std::vector<Piece> pieces;
  size_t plain_start = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!starts_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    const AddedToken* hit = nullptr;
    for (const auto& t : tokens_) {
      if (text.compare(i, t.content.size(), t.content) == 0) {
        hit = &t;
        break;
      }
    }
    if (hit == nullptr) {
      ++i;
      continue;
    }
    if (i > plain_start) pieces.push_back({text.substr(plain_start, i - plain_start), -1});
    pieces.push_back({text.substr(i, hit->content.size()), hit->id});
    i += hit->content.size();
    plain_start = i;
  }
  if (plain_start < text.size()) pieces.push_back({text.substr(plain_start), -1});
  return pieces;
}

}  // namespace ferry::tokenizer
