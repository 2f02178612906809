#include "workflows/diagnostics.h"

#include <algorithm>

namespace ferry::workflow {

std::vector<Diagnostic> Diagnostics::sorted() const {
  std::vector<Diagnostic> sorted = list_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return a.at.line != b.at.line ? a.at.line < b.at.line : a.at.column < b.at.column;
  });
  return sorted;
}

std::string Diagnostics::to_string() const {
  std::string out;
  for (const auto& d : sorted()) {
    out += file_ + ":" + std::to_string(d.at.line) + ":" + std::to_string(d.at.column) + ": " + d.message + "\n";
  }
  return out;
}

// Edits to turn a into b, counting a swap of two neighbours as one edit
// (optimal string alignment): "rnu" is one edit from "run", two from "env".
static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d >= std::max(word.size(), c.size())) continue;  // nothing in common: "zz" is no typo of "b"
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean_hint(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string near = did_you_mean(word, candidates);
  return near.empty() ? "" : " (did you mean '" + near + "'?)";
}

}  // namespace ferry::workflow
