// The stored form of a stage's inputs: its hash decides whether `ferry resume`
// keeps a success, so its keys and values must stay those earlier versions wrote
// (the expected objects below are that shape, written out by hand).
#include "jobs/stage_spec.h"

#include <gtest/gtest.h>

namespace ferry {
namespace {

TEST(StageSpecTest, ACopyIsStoredWithTheEvalFieldsAtTheirDefaults) {
  StageSpec s;
  s.name = "cp";
  CopyStageSpec c;
  c.from_host = "a";
  c.from = "data";
  c.to_host = "b";
  c.to = "in/";
  c.keep_local = "kept";
  c.route = workflow::CopyRoute::kRelay;
  c.streams = 2;
  c.to_transport = workflow::Transport::kSsh;
  c.to_address = "10.0.0.2";
  c.to_port = 2222;
  c.to_user = "u";
  c.to_give_up_s = 30;
  s.spec = c;
  s.upstream["make"] = {{"n", "1"}};
  auto expected = nlohmann::json::parse(R"({
    "kind": "copy", "host": "", "from": "data", "to": "in/", "keep_local": "kept",
    "from_host": "a", "to_host": "b", "from_transport": "local", "to_transport": "ssh",
    "to_address": "10.0.0.2", "to_port": 2222, "to_user": "u", "to_give_up_s": 30.0,
    "route": "relay", "streams": 2,
    "target": "", "drafter": "", "reference": "", "prompts": "", "tokenizer": "",
    "max_new_tokens": 128, "block_size": 0, "device": "cpu", "dtype": "auto",
    "prompt_format": "chat", "threads": 0,
    "upstream": {"make": {"n": "1"}}})");
  EXPECT_EQ(s.stored_json().dump(), expected.dump());
}

TEST(StageSpecTest, AnEvalOnAHostIsStoredWithItsJobEnvAndTheCopyFieldsEmpty) {
  StageSpec s;
  s.name = "ev";
  s.host = "gpu";
  EvalStageSpec e;
  e.target = "t";
  e.drafter = "d";
  e.prompts = "coordinator:p.jsonl";
  e.max_new_tokens = 16;
  e.min_tau = 2.5;
  e.env = {{"FERRY_STAGE", "ev"}};
  e.timeout_s = 60;
  s.spec = e;
  auto expected = nlohmann::json::parse(R"({
    "kind": "eval", "host": "gpu", "env": {"FERRY_STAGE": "ev"}, "timeout_s": 60.0,
    "from": "", "to": "", "keep_local": "", "from_host": "", "to_host": "", "route": "auto", "streams": 4,
    "target": "t", "drafter": "d", "reference": "", "prompts": "coordinator:p.jsonl", "tokenizer": "",
    "max_new_tokens": 16, "block_size": 0, "device": "cpu", "dtype": "auto", "prompt_format": "chat",
    "threads": 0, "min_tau": 2.5, "upstream": {}})");
  EXPECT_EQ(s.stored_json().dump(), expected.dump());
}

TEST(StageSpecTest, ACommandIsStoredWithItsCommandCwdTimeoutAndEnv) {
  StageSpec s;
  s.name = "train";
  s.host = "h";
  CommandStageSpec c;
  c.command = "echo 'hi'";
  c.cwd = "sub";
  c.env = {{"K", "v"}};
  c.required_outputs = {"out"};  // not an input: outputs are checked, not hashed
  s.spec = c;
  auto expected = nlohmann::json::parse(R"({
    "kind": "command", "host": "h", "command": "echo 'hi'", "cwd": "sub", "timeout_s": 0.0,
    "env": {"K": "v"}, "upstream": {}})");
  EXPECT_EQ(s.stored_json().dump(), expected.dump());
}

}  // namespace
}  // namespace ferry
