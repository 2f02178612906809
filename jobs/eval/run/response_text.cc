#include "jobs/eval/run/response_text.h"

#include <sstream>

#include "jobs/eval/run/report_fields.h"
#include "jobs/tokenizer/tokenizer.h"
#include "jobs/tokenizer/utf8.h"

namespace ferry::eval {

std::vector<bool> drafted_tokens(const std::vector<int64_t>& acceptance_lengths, size_t token_count) {
  std::vector<bool> drafted;
  drafted.reserve(token_count);
  drafted.push_back(false);  // the prefill's token
  // Stops at the response's end: lengths read back from a report are a host's word.
  for (size_t k = 0; k < acceptance_lengths.size() && drafted.size() < token_count; ++k) {
    for (int64_t j = 0; j + 1 < acceptance_lengths[k] && drafted.size() < token_count; ++j) drafted.push_back(true);
    drafted.push_back(false);
  }
  drafted.resize(token_count, false);
  return drafted;
}

ResponseText make_response_text(int line, const std::vector<int64_t>& ids,
                                const std::vector<int64_t>& acceptance_lengths, const tokenizer::Tokenizer* tokenizer) {
  ResponseText r;
  r.line = line;
  r.ids = ids;
  r.drafted = drafted_tokens(acceptance_lengths, ids.size());
  r.acceptance_lengths = acceptance_lengths;
  if (!acceptance_lengths.empty()) {
    double sum = 0;
    for (int64_t a : acceptance_lengths) sum += static_cast<double>(a);
    r.tau = sum / static_cast<double>(acceptance_lengths.size());
  }
  auto bytes_of = [&](int64_t id) -> std::string {
    if (tokenizer != nullptr) return tokenizer->decode_bytes({static_cast<int32_t>(id)});
    if (id >= 0 && id < 256) return std::string(1, static_cast<char>(id));
    return "<" + std::to_string(id) + ">";
  };
  std::string plain, marked;
  bool open = false;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (r.drafted[i] != open) {
      marked += open ? kDraftClose : kDraftOpen;
      open = r.drafted[i];
    }
    std::string b = bytes_of(ids[i]);
    plain += b;
    marked += b;
  }
  if (open) marked += kDraftClose;
  r.text = tokenizer::utf8_lossy(plain);
  r.marked_text = tokenizer::utf8_lossy(marked);
  return r;
}

std::vector<std::pair<size_t, size_t>> drafted_spans(const std::vector<bool>& drafted) {
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t i = 0; i < drafted.size();) {
    if (!drafted[i]) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < drafted.size() && drafted[j]) ++j;
    spans.emplace_back(i, j - i);
    i = j;
  }
  return spans;
}

nlohmann::json ResponseText::to_json() const { return fields_json(*this, response_text_fields); }

std::string render_responses(const std::vector<ResponseText>& responses, int count) {
  std::ostringstream out;
  int shown = 0;
  for (const auto& r : responses) {
    if (shown++ >= count) break;
    size_t drafted = 0;
    for (bool d : r.drafted) drafted += d ? 1 : 0;
    out << "--- response " << shown << " (prompt line " << r.line << ", " << r.ids.size() << " tokens, " << drafted
        << " from accepted drafts " << kDraftOpen << "..." << kDraftClose << ")\n"
        << r.marked_text << "\n";
  }
  return out.str();
}

}  // namespace ferry::eval
