#include "jobs/tokenizer/tokenizer.h"

#include <unordered_map>

#include <nlohmann/json.hpp>

#include "base/file_util.h"
#include "base/json_depth.h"
#include "jobs/tokenizer/byte_level.h"
#include "jobs/tokenizer/nfc_normalizer.h"
#include "jobs/tokenizer/utf8.h"

namespace ferry::tokenizer {
namespace {

using json = nlohmann::json;

// Ids index tables of that size: a corrupt file must not ask for gigabytes. The largest
// real vocabularies are a few hundred thousand.
constexpr int64_t kMaxTokenId = 1 << 24;
// Ids below the largest that no entry uses still get a table row each, so a file may leave
// only this many unused: one added token at id 16,000,000 must not cost a gigabyte. (A
// vocabulary cut down for tests keeps its added tokens at their real ids: about 150k gaps.)
constexpr int64_t kMaxUnusedIds = 1 << 18;
// Qwen3's tokenizer.json is 11 MB; the largest real ones about 35 MB.
constexpr size_t kMaxFileBytes = 64 << 20;

// GPT-2's pre-tokenizer regex: what `ByteLevel` splits with when its `use_regex` is true.
constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

std::string type_of(const json& j) {
  return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
}

// model.vocab and model.merges, taken out of the JSON while it is parsed: a DOM of
// 151k vocabulary keys in a std::map and 151k two-string arrays costs most of the load.
struct BpeTables {
  std::vector<std::pair<std::string, json>> vocab;  // as written; ids checked later
  std::vector<json> merges;                          // each ["a", "b"] or "a b"
};

json parse_tokenizer_json(const std::string& text, BpeTables* tables) {
  std::string keys[3];  // the key being read at depths 1 and 2 (model → vocab | merges)
  auto in = [&](const char* field) { return keys[1] == "model" && keys[2] == field; };
  json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key) {
      if (depth <= 2) keys[depth] = parsed.get<std::string>();
      if (depth == 3 && in("vocab")) {
        tables->vocab.emplace_back(parsed.get<std::string>(), json());
        return false;  // not stored in the DOM; the value below lands in the table
      }
      return true;
    }
    if (event == json::parse_event_t::value && depth == 3 && in("vocab") && !tables->vocab.empty()) {
      tables->vocab.back().second = std::move(parsed);
      return true;  // its key was dropped, so the DOM drops it too
    }
    if (event == json::parse_event_t::value && depth == 3 && in("merges")) {
      tables->merges.push_back(std::move(parsed));
      return false;
    }
    if (event == json::parse_event_t::array_end && depth == 3 && in("merges")) {
      tables->merges.push_back(std::move(parsed));
      return false;
    }
    return true;
  };
  return json::parse(text, cb, /*allow_exceptions=*/false);
}

bool flag(const json& j, const char* key) { return j.contains(key) && j[key].is_boolean() && j[key].get<bool>(); }

// The load, with each section's errors prefixed by where they are.
class Loader {
 public:
  explicit Loader(std::string where) : where_(std::move(where)) {}

  Status fail(const std::string& section, const std::string& what) const {
    return invalid_argument(where_ + ": " + section + ": " + what);
  }

  Status normalizer(const json& j, bool* nfc) const {
    if (j.is_null()) return Status();
    std::string type = type_of(j);
    if (type == "NFC") {
      *nfc = true;
      return Status();
    }
    if (type == "Sequence" && j.contains("normalizers") && j["normalizers"].is_array()) {
      for (const auto& n : j["normalizers"]) {
        Status s = normalizer(n, nfc);
        if (!s.ok()) return s;
      }
      return Status();
    }
    return fail("normalizer", "type '" + utf8_shown(type) + "' is not supported (supported: NFC, Sequence of NFC)");
  }

  Status pre_tokenizer(const json& j, std::vector<std::unique_ptr<RegexSplitter>>* splitters, bool* byte_level) const {
    if (j.is_null()) return Status();
    std::string type = type_of(j);
    if (type == "Sequence" && j.contains("pretokenizers") && j["pretokenizers"].is_array()) {
      for (const auto& p : j["pretokenizers"]) {
        Status s = pre_tokenizer(p, splitters, byte_level);
        if (!s.ok()) return s;
      }
      return Status();
    }
    if (type == "Split") return split(j, splitters);
    if (type == "ByteLevel") {
      if (flag(j, "add_prefix_space")) return fail("pre_tokenizer", "ByteLevel with add_prefix_space is not supported");
      *byte_level = true;
      if (!j.contains("use_regex") || flag(j, "use_regex")) {  // Hugging Face's default is true
        auto s = RegexSplitter::create(kGpt2Pattern, false, SplitBehavior::kIsolated);
        if (!s.ok()) return s.status();
        splitters->push_back(std::move(*s));
      }
      return Status();
    }
    return fail("pre_tokenizer",
                "type '" + utf8_shown(type) + "' is not supported (supported: Sequence, Split, ByteLevel)");
  }

  Status split(const json& j, std::vector<std::unique_ptr<RegexSplitter>>* splitters) const {
    if (flag(j, "invert")) return fail("pre_tokenizer", "Split with invert is not supported");
    std::string behavior = j.contains("behavior") && j["behavior"].is_string() ? j["behavior"].get<std::string>() : "";
    SplitBehavior b;
    if (behavior == "Isolated") {
      b = SplitBehavior::kIsolated;
    } else if (behavior == "Removed") {
      b = SplitBehavior::kRemoved;
    } else {
      return fail("pre_tokenizer",
                  "Split behavior '" + utf8_shown(behavior) + "' is not supported (supported: Isolated, Removed)");
    }
    const json& p = j.contains("pattern") ? j["pattern"] : json();
    bool literal;
    std::string pattern;
    if (p.is_object() && p.contains("Regex") && p["Regex"].is_string()) {
      literal = false;
      pattern = p["Regex"].get<std::string>();
    } else if (p.is_object() && p.contains("String") && p["String"].is_string()) {
      literal = true;
      pattern = p["String"].get<std::string>();
    } else {
      return fail("pre_tokenizer", "Split needs a pattern {\"Regex\": ...} or {\"String\": ...}");
    }
    auto s = RegexSplitter::create(pattern, literal, b);
    if (!s.ok()) return fail("pre_tokenizer", s.status().message());
    splitters->push_back(std::move(*s));
    return Status();
  }

  Status model(const json& j, const BpeTables& tables, std::unordered_map<std::string, int32_t>* vocab,
               std::vector<std::pair<std::string, std::string>>* merges) const {
    std::string type = type_of(j);
    if (type != "BPE") return fail("model", "type '" + utf8_shown(type) + "' is not supported (supported: BPE)");
    if (j.contains("dropout") && !j["dropout"].is_null()) return fail("model", "BPE dropout is not supported");
    if (flag(j, "byte_fallback")) return fail("model", "BPE byte_fallback is not supported");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty()) {
        return fail("model", std::string("BPE ") + key + " is not supported");
      }
    }
    if (flag(j, "ignore_merges")) return fail("model", "BPE ignore_merges is not supported");
    if (!j.contains("vocab") || !j["vocab"].is_object()) return fail("model", "'vocab' must be an object");
    vocab->reserve(tables.vocab.size());
    for (const auto& [text, id] : tables.vocab) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= kMaxTokenId) {
        return fail("model", "vocab entry '" + utf8_shown(text) + "' has no valid id");
      }
      (*vocab)[text] = id.get<int32_t>();
    }
    if (!j.contains("merges") || !j["merges"].is_array()) return fail("model", "'merges' must be a list");
    merges->reserve(tables.merges.size());
    for (const auto& m : tables.merges) {
      // Two spellings: ["a", "b"] (tokenizers >= 0.20) and "a b" (older files).
      if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        merges->emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
      } else if (m.is_string()) {
        const std::string& s = m.get_ref<const std::string&>();
        size_t space = s.find(' ', 1);
        if (space == std::string::npos) return fail("model", "merge '" + utf8_shown(s) + "' is not two tokens");
        merges->emplace_back(s.substr(0, space), s.substr(space + 1));
      } else {
        return fail("model", "merge #" + std::to_string(merges->size()) + " is not a pair of strings");
      }
    }
    return Status();
  }

  Status decoder(const json& j) const {
    std::string type = type_of(j);
    if (type == "ByteLevel") return Status();
    return fail("decoder", "type '" + (j.is_null() ? std::string("null") : utf8_shown(type)) +
                               "' is not supported (supported: ByteLevel)");
  }

  Status post_processor(const json& j) const {
    if (j.is_null() || type_of(j) == "ByteLevel") return Status();  // ByteLevel only trims offsets
    return fail("post_processor",
                "type '" + utf8_shown(type_of(j)) + "' is not supported (supported: ByteLevel, none)");
  }

  Status added_tokens(const json& j, std::vector<AddedToken>* out) const {
    if (j.is_null()) return Status();
    if (!j.is_array()) return fail("added_tokens", "must be a list");
    for (const auto& t : j) {
      if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() || !t.contains("content") ||
          !t["content"].is_string()) {
        return fail("added_tokens", "entry #" + std::to_string(out->size()) + " needs 'id' and 'content'");
      }
      std::string content = t["content"].get<std::string>();
      int64_t id = t["id"].get<int64_t>();
      if (id < 0 || id >= kMaxTokenId) return fail("added_tokens", "'" + utf8_shown(content) + "' has no valid id");
      for (const char* key : {"single_word", "lstrip", "rstrip"}) {
        if (flag(t, key)) return fail("added_tokens", "'" + utf8_shown(content) + "': " + key + " is not supported");
      }
      out->push_back({static_cast<int32_t>(id), content, flag(t, "special")});
    }
    return Status();
  }

 private:
  std::string where_;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_file(const std::string& path) {
  auto text = read_file(path, kMaxFileBytes);
  if (!text.ok()) return text.status();
  return from_json(*text, path);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_json(const std::string& json_text, const std::string& where) {
  // Real files nest 5 deep; the bound keeps the walks below, one call per Sequence
  // level, far from the stack's end.
  FERRY_RETURN_IF_ERROR(check_json_depth(json_text, where));
  BpeTables tables;
  json j = parse_tokenizer_json(json_text, &tables);
  if (j.is_discarded() || !j.is_object()) return invalid_argument(where + ": not a JSON object");
  Loader load(where);
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  auto section = [&](const char* key) -> const json& {
    static const json null_json;
    return j.contains(key) ? j[key] : null_json;
  };
  Status s = load.normalizer(section("normalizer"), &t->nfc_);
  if (!s.ok()) return s;
  bool byte_level = false;
  s = load.pre_tokenizer(section("pre_tokenizer"), &t->splitters_, &byte_level);
  if (!s.ok()) return s;
  if (!byte_level) return load.fail("pre_tokenizer", "no ByteLevel step: only byte-level BPE is supported");
  if (!(s = load.decoder(section("decoder"))).ok()) return s;
  if (!(s = load.post_processor(section("post_processor"))).ok()) return s;

  std::unordered_map<std::string, int32_t> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  if (!(s = load.model(section("model"), tables, &vocab, &merges)).ok()) return s;
  auto bpe = BpeModel::create(vocab, merges);
  if (!bpe.ok()) return load.fail("model", bpe.status().message());
  t->bpe_ = std::make_unique<BpeModel>(std::move(*bpe));

  std::vector<AddedToken> added;
  if (!(s = load.added_tokens(section("added_tokens"), &added)).ok()) return s;

  int32_t size = 0;
  for (const auto& [text, id] : vocab) size = std::max(size, id + 1);
  for (const auto& a : added) size = std::max(size, a.id + 1);
  if (size - static_cast<int64_t>(vocab.size() + added.size()) > kMaxUnusedIds) {
    return load.fail("added_tokens", "ids reach " + std::to_string(size - 1) + " with only " +
                                         std::to_string(vocab.size() + added.size()) + " tokens (at most " +
                                         std::to_string(kMaxUnusedIds) + " ids may go unused)");
  }
  t->pieces_.assign(size, std::string());
  t->bytes_.assign(size, std::string());
  for (const auto& [text, id] : vocab) {
    auto bytes = byte_level_decode(text);
    if (!bytes) return load.fail("model", "vocab entry '" + utf8_shown(text) + "' is not byte-level text");
    t->pieces_[id] = text;
    t->bytes_[id] = std::move(*bytes);
  }
  for (const auto& a : added) {  // an added token decodes as its content, not byte-level
    t->pieces_[a.id] = a.content;
    t->bytes_[a.id] = a.content;
  }
  t->added_ = AddedTokens(std::move(added));
  return t;
}

Result<std::vector<int32_t>> Tokenizer::encode(std::string_view text) {
  if (auto bad = utf8_invalid_offset(text)) {
    return invalid_argument("text is not valid UTF-8 (byte " + std::to_string(*bad) + " of " +
                            std::to_string(text.size()) + ")");
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  for (const auto& piece : added_.split(text)) {
    if (piece.id >= 0) {
      ids.push_back(piece.id);
    } else if (nfc_ && !is_nfc(piece.text)) {
      std::string normalized = nfc(piece.text);
      FERRY_RETURN_IF_ERROR(encode_plain(normalized, &ids));
    } else {
      FERRY_RETURN_IF_ERROR(encode_plain(piece.text, &ids));
    }
  }
  return ids;
}

Status Tokenizer::encode_plain(std::string_view text, std::vector<int32_t>* out) {
  scratch_a_.clear();
  scratch_a_.push_back(text);
  for (auto& splitter : splitters_) {
    scratch_b_.clear();
    for (std::string_view piece : scratch_a_) FERRY_RETURN_IF_ERROR(splitter->split(piece, &scratch_b_));
    scratch_a_.swap(scratch_b_);
  }
  for (std::string_view word : scratch_a_) bpe_->encode_word(word, out);
  return Status();
}

std::string Tokenizer::decode_bytes(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (id >= 0 && id < vocab_size()) out += bytes_[id];
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const { return utf8_lossy(decode_bytes(ids)); }

const std::string& Tokenizer::piece(int32_t id) const {
  static const std::string empty;
  return id >= 0 && id < vocab_size() ? pieces_[id] : empty;
}

int32_t Tokenizer::token_id(const std::string& text) const {
  for (const auto& a : added_.tokens()) {
    if (a.content == text) return a.id;
  }
  for (int32_t id = 0; id < vocab_size(); ++id) {
    if (pieces_[id] == text) return id;
  }
  return -1;
}

}  // namespace ferry::tokenizer
