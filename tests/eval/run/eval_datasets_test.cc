// Named datasets in one eval (jobs/eval/run/eval_datasets.h): the forms `ferry eval
// --prompts` and the spec's JSON take, and what they refuse. The engine's figures per
// dataset, whole and sharded, are tested in shard_merge_test.cc (its tiny models).
#include "jobs/eval/run/eval_datasets.h"

#include <gtest/gtest.h>

#include "jobs/eval/run/eval_command.h"

namespace ferry::eval {
namespace {

TEST(EvalDatasetsArgsTest, PromptsFlagTakesNamedFilesOrOneFile) {
  bool json = false;
  auto named = parse_eval_args(
      {"--target", "t", "--drafter", "d", "--prompts", "gsm8k=a/g.jsonl", "--prompts", "humaneval=h.jsonl"}, &json);
  ASSERT_TRUE(named.ok()) << named.status().message();
  ASSERT_EQ(named->datasets.size(), 2u);
  EXPECT_EQ(named->datasets[0].name, "gsm8k");
  EXPECT_EQ(named->datasets[0].prompts, "a/g.jsonl");
  EXPECT_EQ(named->datasets[1].prompts, "h.jsonl");
  EXPECT_TRUE(named->prompts.empty());

  auto plain = parse_eval_args({"--target", "t", "--drafter", "d", "--prompts", "dir/x=y.jsonl"}, &json);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain->prompts, "dir/x=y.jsonl") << "a path with '=' that is no NAME=FILE stays a file";
  EXPECT_TRUE(plain->datasets.empty());

  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--prompts", "a.jsonl", "--prompts", "b.jsonl"}, "name each file"},
           {{"--prompts", "a.jsonl", "--prompts", "x=b.jsonl"}, "not both"},
           {{"--prompts", "x=a.jsonl", "--prompts", "x=b.jsonl"}, "named twice"},
           {{"--prompts", "x="}, "names no file"}}) {
    std::vector<std::string> argv = {"--target", "t", "--drafter", "d"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = parse_eval_args(argv, &json);
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().rfind("--prompts", 0), 0u) << r.status().message();
  }

  // The spec's JSON: datasets only when named (a one-file spec's JSON is as before).
  EvalSpec s;
  s.prompts = "p.jsonl";
  EXPECT_FALSE(eval_spec_json(s).contains("datasets"));
  s.prompts.clear();
  s.datasets = {{"gsm8k", "g.jsonl"}};
  auto back = eval_spec_from_json(eval_spec_json(s));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->datasets[0].name, "gsm8k");
  nlohmann::json j = eval_spec_json(s);
  j["datasets"][0]["name"] = "bad name";
  auto refused = eval_spec_from_json(j);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'bad name'"), std::string::npos) << refused.status().message();
}

}  // namespace
}  // namespace ferry::eval
