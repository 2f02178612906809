// Diagnostics: every problem found in a workflow file, reported together as
// `file:line:col: message` so a user fixes them all in one pass. Plain values.
#pragma once

#include <string>
#include <vector>

#include "workflows/model.h"

namespace ferry::workflow {

struct Diagnostic {
  Location at;
  std::string message;
};

class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}
  void error(Location at, std::string message) { list_.push_back({at, std::move(message)}); }
  bool empty() const { return list_.empty(); }
  size_t size() const { return list_.size(); }
  const std::vector<Diagnostic>& list() const { return list_; }
  /// All of them in file order (line, then column).
  std::vector<Diagnostic> sorted() const;
  /// All of them, one per line, sorted by place.
  std::string to_string() const;
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::vector<Diagnostic> list_;
};

/// The closest of `candidates` to `word` if it is a plausible typo, else "".
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);
/// " (did you mean 'status'?)" for that closest one, else "": the tail of an error.
std::string did_you_mean_hint(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace ferry::workflow
