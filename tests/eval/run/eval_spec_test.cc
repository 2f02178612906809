// The eval spec as it crosses to the engine (jobs/eval/run/eval_spec.h): what the
// stage writes, the engine reads back the same; a key of the wrong type is an error
// naming it, never a silent default; a shard that does not exist is refused.
#include "jobs/eval/run/eval_spec.h"

#include <gtest/gtest.h>

namespace ferry::eval {
namespace {

TEST(EvalSpecTest, WhatIsWrittenIsReadBack) {
  EvalSpec s;
  s.target = "t";
  s.drafter = "d";
  s.prompts = "p.jsonl";
  s.max_new_tokens = 64;
  s.threads = 3;
  s.min_tau = 2.5;
  s.baseline = false;
  s.shard_index = 1;
  s.shard_count = 3;
  s.shards_on_host = 2;
  nlohmann::json j = eval_spec_json(s);
  EXPECT_EQ(j["max_new_tokens"], 64);
  EXPECT_EQ(j["shard_count"], 3);
  auto back = eval_spec_from_json(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->target, "t");
  EXPECT_EQ(back->max_new_tokens, 64);
  EXPECT_EQ(back->threads, 3);
  EXPECT_EQ(back->min_tau, 2.5);
  EXPECT_FALSE(back->min_ratio_to_reference.has_value());
  EXPECT_FALSE(back->baseline);
  EXPECT_EQ(back->shard_index, 1);
  EXPECT_EQ(back->shard_count, 3);
  EXPECT_EQ(back->shards_on_host, 2);
  // Unsharded, the JSON has no shard keys (as before sharded evals).
  EXPECT_FALSE(eval_spec_json(EvalSpec{}).contains("shard_count"));
}

// A watch's checkpoints defer their gate to the stage (issue 41): the words travel to
// the engine, and a spec without them has no such key (its JSON is what it was).
TEST(EvalSpecTest, AGateDeferredTravelsAndIsLeftOutUnset) {
  EvalSpec s;
  s.gate_deferred = "judged on the last checkpoint";
  auto back = eval_spec_from_json(eval_spec_json(s));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->gate_deferred, "judged on the last checkpoint");
  EXPECT_FALSE(eval_spec_json(EvalSpec{}).contains("gate_deferred"));
}

TEST(EvalSpecTest, AWrongTypeIsAnErrorNamingTheKey) {
  const std::pair<const char*, nlohmann::json> cases[] = {
      {"max_new_tokens", "64"}, {"threads", 1.5}, {"min_tau", "3"}, {"baseline", 1}, {"target", 5}};
  for (const auto& [key, value] : cases) {
    nlohmann::json j = {{"target", "t"}, {"drafter", "d"}, {"prompts", "p"}};
    j[key] = value;
    auto r = eval_spec_from_json(j);
    ASSERT_FALSE(r.ok()) << key;
    EXPECT_NE(r.status().message().find(std::string("the eval spec's ") + key + " is "), std::string::npos)
        << r.status().message();
  }
  EXPECT_FALSE(eval_spec_from_json(nlohmann::json::array()).ok());
  auto shard = eval_spec_from_json({{"shard_index", 3}, {"shard_count", 3}});
  ASSERT_FALSE(shard.ok());
  EXPECT_NE(shard.status().message().find("shard 3 of 3"), std::string::npos) << shard.status().message();
}

}  // namespace
}  // namespace ferry::eval
