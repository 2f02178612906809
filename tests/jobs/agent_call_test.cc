// call_op: a typed agent call sends its arguments under the op their struct names,
// and hands over the reply read through its field list, a bad field named, or the
// call's own failure untouched (so transient_link_failure still sees a lost link).
#include "jobs/agent_call.h"

#include <gtest/gtest.h>

#include "protocol/ops/fs.h"
#include "protocol/ops/host.h"
#include "tests/support/scripted_stage_env.h"

namespace ferry {
namespace {

// One call of `args` answered by `reply`; what reached the handler.
template <typename Args>
Result<typename Args::Reply> answer(const Args& args, Result<protocol::Frame> reply, std::string* op_sent = nullptr,
                                    nlohmann::json* args_sent = nullptr) {
  testing::ScriptedStageEnv env([&](const std::string& op, const nlohmann::json& a) {
    if (op_sent) *op_sent = op;
    if (args_sent) *args_sent = a;
    return reply;
  });
  Result<typename Args::Reply> got = invalid_argument("never answered");
  call_op(env, "h", args, [&](Result<typename Args::Reply> r) { got = std::move(r); });
  env.io().run();
  return got;
}

TEST(AgentCallTest, TheArgsGoUnderTheirOpAndTheReplyArrivesRead) {
  std::string op;
  nlohmann::json sent;
  auto reply = protocol::make_reply(1, nlohmann::json::parse(
                                           R"({"exists":true,"path":"/w/x","type":"file","size":5,"mtime_ms":7,
                                               "mtime_ns":7000000,"ino":42})"));
  auto got = answer(protocol::FsStatArgs{"x"}, reply, &op, &sent);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(op, "fs.stat");
  EXPECT_EQ(sent, nlohmann::json::parse(R"({"path":"x"})"));
  EXPECT_TRUE(got->exists);
  EXPECT_EQ(got->type, protocol::FsType::kFile);
  EXPECT_EQ(got->size, 5);
  EXPECT_EQ(got->ino, 42);
}

TEST(AgentCallTest, AReplyWithABadFieldIsAnErrorNamingTheOpAndTheFieldAndIsNotRetried) {
  auto got = answer(protocol::NetProbeArgs{"198.18.0.2", 22, 100},
                    protocol::make_reply(1, nlohmann::json::parse(R"({"reachable":"yes","ms":1})")));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(got.status().message(), "the net.probe reply's reachable is a string, not true or false");
  EXPECT_FALSE(transient_link_failure(got.status()));
}

TEST(AgentCallTest, TheCallsOwnFailureArrivesUntouched) {
  auto lost = answer(protocol::FsStatArgs{"x"}, unavailable("link to host 'h' lost"));
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(lost.status().message(), "link to host 'h' lost");
  EXPECT_TRUE(transient_link_failure(lost.status()));
  EXPECT_TRUE(transient_link_failure(cancelled("closed")));
  auto missing = answer(protocol::FsStatArgs{"x"}, not_found("no such file"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(transient_link_failure(missing.status()));
}

}  // namespace
}  // namespace ferry
